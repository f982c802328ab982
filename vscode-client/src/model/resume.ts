/** Whether a folder's wake was cut off and may be continued at activation (flower.resumeOnStartup; no `vscode` import). */
import type { FolderStatus } from '../protocol';

/**
 * `cut-off`: the server says so (FolderStatus.interrupted, read from files by the server).
 * `wait`: not yet, but the wake's marker (`<runDir>/wake.json`) is there — another process still
 * holds the folder, e.g. the previous window's server ending its wake after a reload (D5): ask
 * again shortly. `no`: nothing to continue (a wake runs here, or none was cut off).
 */
export function cutOff(status: FolderStatus | null, markerExists: boolean): 'cut-off' | 'wait' | 'no' {
    if (status === null || status.running) return 'no';
    if (status.interrupted) return 'cut-off';
    return markerExists ? 'wait' : 'no';
}
