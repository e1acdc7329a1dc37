// The package README's complete examples (every code block that imports the package, and
// the module script of the HTML example) type-check under `tsc --strict` with `checkJs`,
// against the installed package's own declarations, with `skipLibCheck: false` and lib
// ES2023 + DOM: what a TypeScript app copying them meets. Fragments (an option's value, a
// few lines of an earlier example) are not programs and are left out.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import test from 'node:test';
import { fileURLToPath } from 'node:url';
import { installPackage } from './support/pkg.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');
const TSC = path.join(ROOT, 'pkg', 'node_modules', 'typescript', 'bin', 'tsc');

/** The README's programs: [line, source] of each block that imports the package. */
export function programs(markdown) {
  const out = [];
  const re = /^ *```(\w+)\n([\s\S]*?)^ *```$/gm;
  for (const m of markdown.matchAll(re)) {
    const line = markdown.slice(0, m.index).split('\n').length;
    let code = m[2];
    if (m[1] === 'html') {
      const script = /<script type="module">\n([\s\S]*?)<\/script>/.exec(code);
      if (!script) continue;
      code = script[1];
    } else if (m[1] !== 'js' && m[1] !== 'ts') {
      continue;
    }
    if (/^\s*import .* from 'tpsmeter/m.test(code)) out.push([line, code]);
  }
  return out;
}

test("the package README's examples type-check as written", (t) => {
  const pkg = installPackage(t);
  if (!pkg) return;
  if (!pkg.project) {
    t.skip('needs the packed package installed into a project (TPSMETER_PKG_TARBALL)');
    return;
  }
  assert.ok(fs.existsSync(TSC), `TypeScript at ${TSC} (cargo xtask pkg installs it)`);
  const readme = fs.readFileSync(path.join(pkg.dir, 'README.md'), 'utf8');
  const found = programs(readme);
  assert.ok(found.length >= 5, `${found.length} examples found`);
  // The recipes' own dependency (the openai SDK), as the app would have it installed.
  const sdk = path.join(pkg.project, 'node_modules', 'openai');
  if (!fs.existsSync(sdk)) fs.symlinkSync(path.join(HERE, 'node_modules', 'openai'), sdk);
  const dir = path.join(pkg.project, 'readme-check');
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir);
  const files = found.map(([line, code]) => {
    const name = `readme-line-${line}.js`;
    fs.writeFileSync(path.join(dir, name), code);
    return name;
  });
  fs.writeFileSync(
    path.join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        allowJs: true,
        checkJs: true,
        strict: true,
        noEmit: true,
        skipLibCheck: false,
        target: 'ES2022',
        module: 'ESNext',
        moduleResolution: 'bundler',
        lib: ['ES2023', 'DOM', 'DOM.Iterable'],
        types: [],
      },
      files,
    }),
  );
  const r = spawnSync(process.execPath, [TSC, '-p', dir], { encoding: 'utf8' });
  assert.equal(r.status, 0, `tsc --strict over the README's examples:\n${r.stdout}${r.stderr}`);
});
