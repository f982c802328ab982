/**
 * How many times a crashed server is restarted by itself: at most `max` (3), then it stays
 * stopped and the gauge says so — never a crash loop behind a status that still says "up"
 * (the default handler restarts 4 times in 3 minutes and then gives up silently).
 */
export class RestartBudget {
    private used = 0;

    constructor(readonly max = 3) {}

    /** The server process ended unasked: true to restart it, false to leave it stopped. */
    crashed(): boolean {
        if (this.used >= this.max) return false;
        this.used++;
        return true;
    }

    /** Restarts used so far. */
    get count(): number {
        return this.used;
    }

    /** A restart the person asked for starts a fresh budget. */
    reset(): void {
        this.used = 0;
    }
}
