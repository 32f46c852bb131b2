/** Session sockets being closed, by session id: the same session is reconnected only after its close (one connection per session, spec §8). */
export class SocketClosings {
  private readonly closing = new Map<string, Promise<void>>();

  track(sessionId: string, closing: Promise<void>): Promise<void> {
    const tracked = closing.finally(() => {
      if (this.closing.get(sessionId) === tracked) this.closing.delete(sessionId);
    });
    this.closing.set(sessionId, tracked);
    return tracked;
  }

  /** The close under way of that session's socket, if any. */
  of(sessionId: string): Promise<void> | undefined {
    return this.closing.get(sessionId);
  }
}
