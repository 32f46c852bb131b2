/** One virtual reader of a private pcscd: what the daemon reports and the private folder's config lists. */
export interface PcscdReader {
  /** Exact PC/SC reader name. */
  readonly name: string;
  readonly host: '127.0.0.1';
  /** vpcd port: a TCP connection here is a card insertion, closing it a removal (frankmorgner/vsmartcard `vpcd.c`). */
  readonly port: number;
}
