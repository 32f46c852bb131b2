/**
 * Types for pino-roll@4 (the package ships none): its default export, as its source documents it
 * (node_modules/pino-roll/pino-roll.js). It resolves to a SonicBoom stream that rolls its file.
 */
declare module 'pino-roll' {
  import type { SonicBoom, SonicBoomOpts } from 'sonic-boom';

  export interface PinoRollOptions extends Omit<SonicBoomOpts, 'dest' | 'fd'> {
    /** Base path; `.<date>.<number>.<extension>` is appended. */
    file: string | (() => string);
    /** Roll when a file reaches this size: a number of MB, or `'10m'`, `'512k'`, `'1g'`. */
    size?: string | number;
    /** Roll every day or hour (or every N ms). */
    frequency?: 'daily' | 'hourly' | number;
    extension?: string;
    symlink?: boolean;
    /** Keep this many files besides the current one; `removeOtherLogFiles` counts earlier runs' files too. */
    limit?: { count: number; removeOtherLogFiles?: boolean };
    /** date-fns format put in the file name, e.g. `yyyy-MM-dd`. */
    dateFormat?: string;
  }

  export default function pinoRoll(options: PinoRollOptions): Promise<SonicBoom>;
}
