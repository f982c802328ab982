/** flower's settings → the server's `initializationOptions` (protocol.md: rounds, trim, handoffAt). */
import type { InitializationOptions } from '../protocol';

/** The raw values of `flower.rounds`, `flower.trim`, `flower.handoffAt` as the configuration holds them. */
export interface RawSettings {
    rounds: unknown;
    trim: unknown;
    handoffAt: unknown;
}

/** Only the server options, only valid values: anything else is left to the server's default. */
export function initializationOptions(raw: RawSettings): InitializationOptions {
    const options: InitializationOptions = {};
    if (isPositiveInt(raw.rounds)) options.rounds = raw.rounds;
    if (typeof raw.trim === 'boolean') options.trim = raw.trim;
    if (isPositiveInt(raw.handoffAt)) options.handoffAt = raw.handoffAt;
    return options;
}

function isPositiveInt(x: unknown): x is number {
    return typeof x === 'number' && Number.isInteger(x) && x > 0;
}

/** `flower.resumeOnStartup`: what to do at activation with a wake the window cut off. */
export type ResumeOnStartup = 'ask' | 'always' | 'never';

/** The setting's value, `ask` for anything unexpected. */
export function resumeOnStartup(raw: unknown): ResumeOnStartup {
    return raw === 'always' || raw === 'never' ? raw : 'ask';
}
