// Bundles the extension (Node, `vscode` external) and the webview page (browser) into dist/;
// with --tests, the unit tests of the pure modules into out/test/ for `node --test`.
import { build } from 'esbuild';
import { readdirSync } from 'node:fs';

const common = { bundle: true, sourcemap: true, logLevel: 'warning', legalComments: 'none' };

if (process.argv.includes('--tests')) {
    const tests = readdirSync('test').filter((f) => f.endsWith('.test.ts')).map((f) => `test/${f}`);
    await build({ ...common, entryPoints: tests, outdir: 'out/test', platform: 'node', format: 'cjs', target: 'node20', external: ['playwright-core'] });
} else {
    await Promise.all([
        build({
            ...common,
            entryPoints: ['src/extension.ts'],
            outfile: 'dist/extension.js',
            platform: 'node',
            format: 'cjs',
            target: 'node18',
            external: ['vscode'],
            minify: true,
        }),
        build({
            ...common,
            entryPoints: ['src/webview/main.ts'],
            outfile: 'dist/webview.js',
            platform: 'browser',
            format: 'iife',
            target: 'es2020',
            minify: true,
        }),
    ]);
}
