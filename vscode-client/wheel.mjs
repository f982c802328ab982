// Builds the flower server's wheel into python/ for the .vsix (`npm run package` runs it first).
// On PyPI `flower` is another project, so the extension installs the server from this wheel.
// The build runs on a copy of the sources in a temp dir: setuptools leaves build/ and
// *.egg-info next to what it builds, and the repository stays clean.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';

const root = join(import.meta.dirname, '..');
const out = join(import.meta.dirname, 'python');
const python = process.env.FLOWER_BUILD_PYTHON ?? 'python3';
const src = mkdtempSync(join(tmpdir(), 'flower-wheel-'));
try {
    for (const f of ['pyproject.toml', 'README.md']) cpSync(join(root, f), join(src, f));
    cpSync(join(root, 'server'), join(src, 'server'), {
        recursive: true,
        filter: (p) => !['__pycache__', '.mypy_cache'].includes(basename(p)) && !p.endsWith('.egg-info') && !p.endsWith('.pyc'),
    });
    rmSync(out, { recursive: true, force: true });
    // --no-deps: the wheel is flower alone; pip resolves its dependencies when it is installed.
    execFileSync(python, ['-m', 'pip', 'wheel', '--no-deps', '--quiet', '--wheel-dir', out, src], { stdio: 'inherit' });
} finally {
    rmSync(src, { recursive: true, force: true });
}
const wheels = readdirSync(out).filter((f) => f.endsWith('.whl'));
if (wheels.length !== 1 || !/^flower-[^-]+-py3-none-any\.whl$/.test(wheels[0])) throw new Error(`expected one flower wheel in ${out}, found: ${wheels.join(', ')}`);
console.log(`python/${wheels[0]}`);
