// A W3C WebDriver (classic) client for WebKitGTK: Debian's WebKitWebDriver (package
// webkit2gtk-driver) starting MiniBrowser in automation mode. Only what the cross-engine
// tests use: sessions, navigation, scripts, windows. Playwright drives only its own WebKit
// builds and puppeteer none, so Debian's WebKit is reached through its own driver.

import { freePort, startServer } from './servers.mjs';

export const WEBKIT_DRIVER = process.env.TPSMETER_WEBKIT_DRIVER || '/usr/bin/WebKitWebDriver';
export const MINIBROWSER = process.env.TPSMETER_MINIBROWSER || '/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser';

/** How long one WebDriver command may take (a script that waits has its own timeout). */
const COMMAND_MS = 300_000;

export class WebDriverError extends Error {
  constructor(command, status, value) {
    super(`WebDriver ${command}: ${value?.error ?? status}: ${value?.message ?? ''}`.trim());
    this.name = 'WebDriverError';
    this.code = value?.error;
  }
}

/** Starts WebKitWebDriver and a MiniBrowser session. Resolves to a `WebDriverSession`. */
export async function startWebKit() {
  const port = await freePort();
  // The driver answers /status with 200 once it listens. MiniBrowser runs under this
  // process's LANG, as a user's machine has it (C.UTF-8 here: the page must render under it).
  const driver = await startServer(WEBKIT_DRIVER, [`--port=${port}`], port, '/status', 30_000);
  const caps = {
    capabilities: {
      alwaysMatch: {
        browserName: 'MiniBrowser',
        'webkitgtk:browserOptions': { binary: MINIBROWSER, args: ['--automation'] },
      },
    },
  };
  let created;
  try {
    created = await call(driver.base, 'POST', '/session', caps);
  } catch (e) {
    await driver.stop();
    throw new Error(`${e.message} (${driver.log().trim()})`);
  }
  return new WebDriverSession(driver.base, created.sessionId, created.capabilities, driver);
}

async function call(base, method, path, body) {
  const r = await fetch(base + path, {
    method,
    headers: body === undefined ? undefined : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(COMMAND_MS),
  });
  const json = await r.json().catch(() => ({}));
  if (!r.ok) throw new WebDriverError(`${method} ${path.replace(/\/session\/[^/]+/, '')}`, r.status, json.value);
  return json.value;
}

export class WebDriverSession {
  constructor(base, id, capabilities, driver) {
    this.base = base;
    this.id = id;
    this.capabilities = capabilities;
    this.driver = driver;
  }

  cmd(method, path, body) {
    return call(this.base, method, `/session/${this.id}${path}`, body);
  }

  /** The browser's version as the driver reports it (WebKitGTK's, e.g. 2.50.6). */
  get version() {
    return this.capabilities?.browserVersion ?? 'unknown';
  }

  navigate(url) {
    return this.cmd('POST', '/url', { url });
  }

  url() {
    return this.cmd('GET', '/url');
  }

  /**
   * Runs `source` (a function's text) with `args` in the page and resolves to what its
   * promise resolves to; a rejection comes back as an Error with the page's message.
   */
  async run(source, args) {
    const script = `const done = arguments[arguments.length - 1];
      Promise.resolve().then(() => (${source})(...arguments[0])).then(
        (value) => done({ ok: true, value: value === undefined ? null : value }),
        (e) => done({ ok: false, message: e instanceof Error ? e.name + ': ' + e.message : String(e) }));`;
    const out = await this.cmd('POST', '/execute/async', { script, args: [args] });
    if (!out?.ok) throw new Error(out?.message ?? 'the script failed');
    return out.value;
  }

  async setScriptTimeout(ms) {
    await this.cmd('POST', '/timeouts', { script: ms, pageLoad: 120_000 });
  }

  windows() {
    return this.cmd('GET', '/window/handles');
  }

  async newWindow() {
    const { handle } = await this.cmd('POST', '/window/new', { type: 'tab' });
    return handle;
  }

  switchTo(handle) {
    return this.cmd('POST', '/window', { handle });
  }

  closeWindow() {
    return this.cmd('DELETE', '/window');
  }

  async quit() {
    await this.cmd('DELETE', '').catch(() => {});
    await this.driver.stop();
  }
}
