/**
 * The command that makes `import flower` work for an interpreter (no `vscode` import, unit-tested).
 * On PyPI `flower` is another project (Celery's Flower), so the server is never installed by
 * that name: the .vsix carries its own wheel (`python/flower-<version>-py3-none-any.whl`, built
 * by `npm run package`); an extension run from a checkout installs the checkout instead.
 */

/** The flower wheel among a directory's file names (the newest version when several). */
export function findWheel(files: readonly string[]): string | undefined {
    const wheels = files.filter((f) => /^flower-[^-]+-py3-none-any\.whl$/.test(f));
    return wheels.sort((a, b) => a.localeCompare(b, 'en', { numeric: true })).pop();
}

/** A word as a POSIX shell reads it: unchanged when plain, else single-quoted. */
export function shellQuote(word: string): string {
    return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** What there is to install: the bundled wheel, or (run from a checkout) the repository. */
export type Source = { wheel: string } | { checkout: string };

/** `<interpreter> -m pip install <wheel>`, or `-e <checkout>`, ready to run in a terminal. */
export function pipInstall(python: string, source: Source): string {
    const target = 'wheel' in source ? shellQuote(source.wheel) : `-e ${shellQuote(source.checkout)}`;
    return `${shellQuote(python)} -m pip install ${target}`;
}
