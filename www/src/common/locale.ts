// The browser's language tag, made one that `Intl` accepts. A browser started under a POSIX
// locale can report it as it is: WebKitGTK under `LANG=C.UTF-8` says `navigator.language`
// is "C", and `new Intl.NumberFormat("C")` throws a RangeError. The chart library formats
// its axes with `navigator.language`, so one such tag stopped the benchmark page from
// rendering at all. boot.ts calls `guardLocale()` before any other module reads it.

/** What a tag that names no usable language falls back to. */
export const FALLBACK_LOCALE = 'en-US';

/**
 * A BCP 47 tag `Intl` accepts for `tag`: the tag itself when valid, a POSIX form
 * (`en_US.UTF-8`, `de_DE@euro`) turned into one (`en-US`, `de-DE`), else the fallback
 * (`C`, `POSIX`, empty, garbage).
 */
export function validLocale(tag: string | undefined | null): string {
  const raw = (tag ?? '').trim();
  const posix = raw.replace(/[.@].*$/, '').replace(/_/g, '-');
  for (const t of [raw, posix]) {
    // `C` and `POSIX` name no language (POSIX is a valid tag by syntax, but not a language).
    if (!t || /^(c|posix)$/i.test(t)) continue;
    try {
      const [canonical] = Intl.getCanonicalLocales(t);
      if (canonical) {
        // Constructing a formatter is what the chart library does; it must not throw either.
        new Intl.NumberFormat(canonical);
        return canonical;
      }
    } catch {
      // Not a tag: try the next form.
    }
  }
  return FALLBACK_LOCALE;
}

/**
 * Makes `navigator.language` and `navigator.languages` valid tags for the rest of the page
 * (an own getter shadows the prototype's). Does nothing where they are valid already.
 * Returns the tag the page now sees.
 */
export function guardLocale(nav: Navigator = navigator): string {
  const language = validLocale(nav.language);
  if (language !== nav.language) {
    Object.defineProperty(nav, 'language', { configurable: true, get: () => language });
  }
  const languages = (nav.languages ?? []).map(validLocale);
  if (languages.length === 0) languages.push(language);
  if (languages.some((l, i) => l !== nav.languages?.[i])) {
    const frozen = Object.freeze([...new Set(languages)]);
    Object.defineProperty(nav, 'languages', { configurable: true, get: () => frozen });
  }
  return language;
}
