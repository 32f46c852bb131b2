/** The decode-only OpenJPEG wasm build of @cornerstonejs/codec-openjpeg (a CommonJS Emscripten factory; no types shipped). */
declare module '@cornerstonejs/codec-openjpeg/decodewasmjs' {
  interface OpenJpegFrameInfo {
    width: number;
    height: number;
    bitsPerSample: number;
    componentCount: number;
    isSigned: boolean;
  }
  interface OpenJpegDecoder {
    getEncodedBuffer(length: number): Uint8Array;
    decode(): void;
    getFrameInfo(): OpenJpegFrameInfo;
    getDecodedBuffer(): Uint8Array;
    delete(): void;
  }
  interface OpenJpegModule {
    J2KDecoder: new () => OpenJpegDecoder;
  }
  interface OpenJpegOptions {
    locateFile?: (path: string, prefix: string) => string;
    print?: (text: string) => void;
    printErr?: (text: string) => void;
  }
  const factory: (options?: OpenJpegOptions) => Promise<OpenJpegModule>;
  export default factory;
}
