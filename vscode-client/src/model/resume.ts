/** Whether a folder's wake was cut off and may be continued at activation (flower.resumeOnStartup; no `vscode` import). */
import type { FolderStatus } from '../protocol';

/**
 * `cut-off`: the server says so (FolderStatus.interrupted). `wait`: not yet, but a wake of the task
 * is under way in another process (FolderStatus.elsewhere) — e.g. the previous window's server
 * ending its wake after a reload (D5), on this machine or, with a shared store, another: ask again
 * shortly. `no`: nothing to continue (a wake runs here, or none was cut off).
 */
export function cutOff(status: FolderStatus | null): 'cut-off' | 'wait' | 'no' {
    if (status === null || status.running) return 'no';
    if (status.interrupted) return 'cut-off';
    return status.elsewhere ? 'wait' : 'no';
}
