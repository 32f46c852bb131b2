/**
 * The browser globals that Playwright page callbacks in the end-to-end tests touch, typed for this Node
 * project (its tsconfig has no DOM lib: the DOM's types clash with Node's in src/). Type-only: import with
 * `import type`, then `declare const document: PageDocument` in the module that evaluates in the page.
 */
export interface PageCanvas {
  readonly tagName: string;
  width: number;
  height: number;
  getContext(kind: '2d'): PageContext2d | null;
}

export interface PageContext2d {
  drawImage(source: PageCanvas, x: number, y: number): void;
  getImageData(x: number, y: number, width: number, height: number): { readonly data: Uint8ClampedArray };
}

export interface PageElement {
  readonly tagName: string;
  readonly outerHTML: string;
  readonly value?: string;
}

export interface PageDocument {
  readonly documentElement: PageElement;
  readonly title: string;
  querySelector(selector: string): PageElement | null;
  querySelectorAll(selector: string): ArrayLike<PageElement>;
  createElement(tag: 'canvas'): PageCanvas;
}

export interface PageStorage {
  readonly length: number;
  key(index: number): string | null;
  getItem(key: string): string | null;
}

export interface PageIndexedDb {
  databases(): Promise<{ readonly name?: string }[]>;
}

export interface PageCaches {
  keys(): Promise<string[]>;
}
