/**
 * Whether a folder's server should start when the window opens: it has a flower task (issue 33).
 * Pure (no `vscode` import), unit-tested.
 *
 * The server is the one that knows — it reads the run dir the folder's settings name, or the
 * shared store — and says so in `FolderStatus.hasTask`. Before any server runs, starting one to
 * ask would start a Python process (or, in the default shared mode, the user's engine) for every
 * folder of every window, so the window decides from cheap facts, each of them only a reason to
 * start and ask, never to conclude "no task" where the server could say otherwise:
 * - the server's last answer for this folder, remembered by the window (`hasTask: true`);
 * - `runs/lineage.json` in the folder (the default run dir, S4);
 * - a run dir named by `FLOWER_RUN_DIR` or by the folder's `.flower.toml` / `[tool.flower]`
 *   (only the server resolves it: it is relative to the workspace, or to the current directory);
 * - a shared store (the task lives in the database, D9).
 */

/** What the window can read cheaply about a folder. */
export interface TaskFacts {
    /** The server's last `hasTask` for this folder, undefined when no server has answered yet. */
    remembered: boolean | undefined;
    /** `<folder>/runs/lineage.json` exists. */
    lineage: boolean;
    /** `FLOWER_RUN_DIR` is set in the window's environment. */
    runDirVariable: boolean;
    /** The flower part of the folder's settings file (`flowerPart`), '' without one. */
    settings: string;
    /** The folder's store is shared (`sharedStore`). */
    sharedStore: boolean;
}

/** Whether the settings file's flower part sets `run_dir` (a TOML key at the start of a line). */
export function namesRunDir(flowerPart: string): boolean {
    return /^\s*(?:run_dir|"run_dir"|'run_dir')\s*=/m.test(flowerPart);
}

/** Start the folder's server at startup: the server said it has a task, or a fact says it may have one. */
export function mayHaveTask(f: TaskFacts): boolean {
    return f.remembered === true || f.lineage || f.runDirVariable || namesRunDir(f.settings) || f.sharedStore;
}
