// First module of every page: a language tag Intl accepts, the connect-src policy (before anything can fetch), the
// colour theme (before first paint of the app), the theme switch and the service worker.

import { installConnectPolicy } from './common/csp';
import { guardLocale } from './common/locale';

// Before any module formats a number with the browser's language (the charts do at load).
guardLocale();
installConnectPolicy();

const THEME_KEY = 'tpsmeter.theme';
type Theme = 'auto' | 'light' | 'dark';

function applyTheme(theme: Theme): void {
  if (theme === 'auto') delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = theme;
  window.dispatchEvent(new CustomEvent('tpsmeter-theme'));
}

function storedTheme(): Theme {
  const t = localStorage.getItem(THEME_KEY);
  return t === 'light' || t === 'dark' ? t : 'auto';
}

applyTheme(storedTheme());

/** Wires the header's theme select (present on every page). */
export function wireThemeSwitch(): void {
  const select = document.querySelector<HTMLSelectElement>('#theme');
  if (!select) return;
  select.value = storedTheme();
  select.addEventListener('change', () => {
    const t = select.value as Theme;
    if (t === 'auto') localStorage.removeItem(THEME_KEY);
    else localStorage.setItem(THEME_KEY, t);
    applyTheme(t);
  });
  matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => applyTheme(storedTheme()));
}

/** Whether dark colours are in use now (the charts read it when they draw). */
export function isDark(): boolean {
  const t = document.documentElement.dataset.theme;
  return t ? t === 'dark' : matchMedia('(prefers-color-scheme: dark)').matches;
}

// Offline after the first visit. Only in a build: the dev server has no sw.js.
if (import.meta.env.PROD && 'serviceWorker' in navigator && location.protocol !== 'file:') {
  navigator.serviceWorker.register('./sw.js').catch((e: unknown) => {
    // Not fatal (private windows, some hosts): the page works online without it.
    console.info('service worker not registered:', e instanceof Error ? e.message : e);
  });
}
