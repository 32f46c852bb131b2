/**
 * Types for @echogarden/espeak-ng-emscripten@0.3.5 (the package ships none): the part of its Emscripten
 * module the built-in voice uses, as the package's glue (espeak-ng.js) defines it. The default export is
 * the module factory; `eSpeakNGWorker` wraps one eSpeak NG instance.
 */
declare module '@echogarden/espeak-ng-emscripten' {
  export interface ESpeakNGWorker {
    /** An eSpeak NG voice identifier (`en-us`, `es`, `fr`, …). */
    set_voice(voice: string): void;
    /** Words per minute (eSpeak NG's normal is 175). */
    set_rate(wpm: number): void;
    get_samplerate(): number;
    /**
     * Synthesises `text`, handing over 16-bit mono samples chunk by chunk (`null` at the end); returning
     * non-zero from the callback stops it.
     */
    synthesize(text: string, callback: (samples: Int16Array | null, events: unknown) => number): void;
    /** The text's phonemes in IPA: words separated by spaces, phonemes by `_`, clauses by newlines. */
    synthesize_ipa(text: string): { code: number; ipa: string };
  }

  export interface ESpeakNGModule {
    eSpeakNGWorker: new () => ESpeakNGWorker;
  }

  export interface ESpeakNGModuleOptions {
    /** Where the glue finds its companion files (`espeak-ng.data`). */
    locateFile?: (path: string, scriptDirectory: string) => string;
    print?: (text: string) => void;
    printErr?: (text: string) => void;
  }

  const factory: (options?: ESpeakNGModuleOptions) => Promise<ESpeakNGModule>;
  export default factory;
}
