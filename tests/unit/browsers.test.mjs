// What the package and the page do for the three browser engines' quirks, in plain Node
// where a quirk can be reproduced: POSIX language tags (WebKitGTK under LANG=C.UTF-8), and
// Resource Timing entries without real phases (Firefox's fetches under a service worker).

import test from 'node:test';
import assert from 'node:assert/strict';
import { pkgModule, wwwModule } from './support.mjs';

test('a language tag Intl refuses falls back to one it takes', async () => {
  const { validLocale, guardLocale, FALLBACK_LOCALE } = await wwwModule('common/locale.ts');
  assert.throws(() => new Intl.NumberFormat('C'), RangeError, 'the quirk this guards against');
  for (const bad of ['C', 'C.UTF-8', 'POSIX', '', undefined, '!!', 'x-'.repeat(40)]) {
    assert.equal(validLocale(bad), FALLBACK_LOCALE, `${String(bad)}`);
  }
  assert.equal(validLocale('en_GB.UTF-8'), 'en-GB');
  assert.equal(validLocale('de_DE@euro'), 'de-DE');
  assert.equal(validLocale('fr-CA'), 'fr-CA');
  assert.equal(validLocale('zh-hant-tw'), 'zh-Hant-TW');

  // A navigator as WebKitGTK's under LANG=C.UTF-8: its tags become valid ones.
  const nav = Object.create({ get language() { return 'C'; }, get languages() { return ['C', 'en_US']; } });
  assert.equal(guardLocale(nav), FALLBACK_LOCALE);
  assert.equal(nav.language, FALLBACK_LOCALE);
  assert.deepEqual([...nav.languages], ['en-US']);
  assert.doesNotThrow(() => new Intl.NumberFormat(nav.language));
  // A valid one is left alone (no own property is added).
  const fine = Object.create({ get language() { return 'nl-NL'; }, get languages() { return ['nl-NL']; } });
  assert.equal(guardLocale(fine), 'nl-NL');
  assert.equal(Object.getOwnPropertyNames(fine).length, 0);
});

test('a Resource Timing entry with no real phases is unknown, never 0 ms', async () => {
  const { timingOf } = await pkgModule('bench/timing.js');
  const base = {
    startTime: 100, fetchStart: 100, domainLookupStart: 100, domainLookupEnd: 100, connectStart: 100,
    connectEnd: 100, secureConnectionStart: 0, requestStart: 100, responseStart: 100, nextHopProtocol: '',
  };
  // Firefox, fetching from a Worker on a page with an active service worker: every stamp is startTime.
  const flat = timingOf(base);
  assert.equal(flat.opaque, true);
  assert.equal(flat.reason, 'no_phases');
  assert.equal(flat.queueMs, undefined);
  assert.equal(flat.waitMs, undefined);
  assert.equal(flat.httpVersion, undefined);
  // Cross-origin without Timing-Allow-Origin: zeroed stamps.
  const zeroed = timingOf({ ...base, domainLookupStart: 0, domainLookupEnd: 0, connectStart: 0, connectEnd: 0, requestStart: 0, responseStart: 0 });
  assert.equal(zeroed.opaque, true);
  assert.equal(zeroed.reason, 'no_timing_allow_origin');
  // A real entry: its phases.
  const real = timingOf({ ...base, connectStart: 101, connectEnd: 102, requestStart: 103, responseStart: 140, nextHopProtocol: 'http/1.1' });
  assert.equal(real.opaque, false);
  assert.equal(real.reason, undefined);
  assert.equal(real.waitMs, 37);
  assert.equal(real.connectMs, 1);
  assert.equal(real.httpVersion, 'http/1.1');
});

test("a user agent names its engine, browser and version; WebKit off Apple's systems is not Safari", async () => {
  const { browserIdentity } = await pkgModule('bench/environment.js');
  const cases = [
    ['Mozilla/5.0 (X11; Linux x86_64; rv:153.0) Gecko/20100101 Firefox/153.0', { engine: 'gecko', browser: 'Firefox', version: '153.0' }],
    ['Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/156.0.0.0 Safari/537.36', { engine: 'blink', browser: 'Chrome (headless)', version: '156.0.0.0' }],
    ['Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36 Edg/156.0.0.0', { engine: 'blink', browser: 'Edge', version: '156.0.0.0' }],
    ['Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36', { engine: 'blink', browser: 'Chrome', version: '156.0.0.0' }],
    ['Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/26.1 Safari/605.1.15', { engine: 'webkit', browser: 'Safari', version: '26.1' }],
    // WebKitGTK's MiniBrowser: its Version/60.5 is no release of anything.
    ['Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/60.5 Safari/605.1.15', { engine: 'webkit', browser: 'WebKit', version: '605.1.15' }],
    ['curl/8.0', { engine: 'unknown', browser: 'unknown', version: '0' }],
  ];
  for (const [ua, want] of cases) assert.deepEqual(browserIdentity(ua), want, ua);
});
