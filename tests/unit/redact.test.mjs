// One URL redactor: the core's (crates/tpsmeter-core/src/redact/url.rs), which the CLI's
// reports use, reached by the package (`redactUrl`, and its own messages) and the page.

import test from 'node:test';
import assert from 'node:assert/strict';
import { pkg, pkgModule } from './support.mjs';

const CASES = [
  ['https://user:pw@api.example.com/v1?key=sk-1&alt=sse#frag', 'https://api.example.com/v1?alt=sse'],
  ['https://generativelanguage.googleapis.com/v1beta/models?key=AIza123', 'https://generativelanguage.googleapis.com/v1beta/models'],
  ['https://h.blob.core.windows.net/c?sv=2024&sig=abc%2Bdef&se=1', 'https://h.blob.core.windows.net/c?sv=2024&se=1'],
  ['http://127.0.0.1:8080/api?access_token=t&my-api-key=k&q=1', 'http://127.0.0.1:8080/api?q=1'],
  ['not a url ?password=p', 'not a url '],
];

test('the package redacts URLs with the core redactor', async () => {
  const { redactUrl } = await pkg();
  for (const [url, want] of CASES) assert.equal(await redactUrl(url), want, url);
  // The package's own messages (a dataset's URL, an unreachable server) go through it.
  const redact = await pkgModule('bench/redact.js');
  for (const [url, want] of CASES) assert.equal(redact.redactUrl(url), want, url);
});

test("messages lose the key in every form it travels in", async () => {
  const { redactor } = await pkgModule('bench/redact.js');
  const key = 'sk-test-0123456789abcdef';
  const scrub = redactor(key);
  assert.equal(scrub(`401: your key ${key} is invalid`), '401: your key REDACTED is invalid');
  const basic = Buffer.from(`user:${key}`).toString('base64');
  assert.doesNotMatch(scrub(`Authorization: Basic ${basic}`), new RegExp(key.slice(3, 11)));
  assert.equal(scrub('GET /v1?key=abc&x=1 failed'), 'GET /v1?key=REDACTED&x=1 failed');
  // A short "key" would match innocent text: it is left alone.
  assert.equal(redactor('abc')('abc def'), 'abc def');
});
