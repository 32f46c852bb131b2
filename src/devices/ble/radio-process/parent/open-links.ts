/**
 * The links (central role) and sessions (peripheral role) open on the radio process, by id: what the child
 * says of them — a notification, a disconnect, a phone's event — reaches their handlers here, and a child
 * that is gone ends them all.
 */
import type { BleCentralHandlers, PeripheralEvent } from '../../../ports.js';
import type { ChildMessage, ParentMessage, PeripheralEventWire } from '../protocol.js';

export interface LinkEntry {
  readonly handlers: BleCentralHandlers;
  /** The connect resolved: its caller holds the link and hears its disconnect. */
  handedOut: boolean;
  ended: boolean;
}

interface SessionEntry {
  readonly onEvent: (event: PeripheralEvent) => void;
  ended: boolean;
}

export class OpenLinks {
  private readonly links = new Map<number, LinkEntry>();
  private readonly sessions = new Map<number, SessionEntry>();

  /** `post` answers a phone's read (`read-answer`). */
  constructor(private readonly post: (message: ParentMessage) => void) {}

  /** A link or session is open: a verification is using the radio. */
  get inUse(): boolean {
    return this.links.size > 0 || this.sessions.size > 0;
  }

  /** Whether a link or session of this id is open. */
  holds(id: number): boolean {
    return this.links.has(id) || this.sessions.has(id);
  }

  addLink(id: number, handlers: BleCentralHandlers): LinkEntry {
    const entry: LinkEntry = { handlers, handedOut: false, ended: false };
    this.links.set(id, entry);
    return entry;
  }

  dropLink(id: number): void {
    this.links.delete(id);
  }

  addSession(id: number, onEvent: (event: PeripheralEvent) => void): void {
    this.sessions.set(id, { onEvent, ended: false });
  }

  dropSession(id: number): void {
    this.sessions.delete(id);
  }

  /** What the child says of one link or session. */
  receive(message: Extract<ChildMessage, { t: 'notification' | 'disconnect' | 'event' }>): void {
    switch (message.t) {
      case 'notification': {
        const link = this.links.get(message.link);
        if (link && !link.ended) link.handlers.onNotification(message.uuid, message.data);
        return;
      }
      case 'disconnect': {
        const link = this.links.get(message.link);
        if (!link) return;
        this.links.delete(message.link);
        if (link.handedOut && !link.ended) {
          link.ended = true;
          link.handlers.onDisconnect(message.reason);
        }
        return;
      }
      case 'event': {
        const session = this.sessions.get(message.session);
        if (session && !session.ended) {
          // A `disconnect` event is the phone leaving: the session stays open (advertising resumes).
          session.onEvent(this.peripheralEvent(message.session, message.event));
        }
        return;
      }
    }
  }

  /** The child is gone: every link and session handed out hears `reason` as its disconnect. */
  cut(reason: string): void {
    for (const [id, link] of [...this.links]) {
      this.links.delete(id);
      if (link.handedOut && !link.ended) {
        link.ended = true;
        link.handlers.onDisconnect(reason);
      }
    }
    for (const [id, session] of [...this.sessions]) {
      this.sessions.delete(id);
      if (!session.ended) {
        session.ended = true;
        session.onEvent({ kind: 'disconnect', reason });
      }
    }
  }

  private peripheralEvent(session: number, wire: PeripheralEventWire): PeripheralEvent {
    if (wire.kind !== 'read') return wire;
    let answered = false;
    const answer = (value?: Uint8Array): void => {
      if (answered) return;
      answered = true;
      this.post({ t: 'read-answer', session, read: wire.read, ...(value ? { value } : {}) });
    };
    return {
      kind: 'read',
      characteristicUuid: wire.characteristicUuid,
      offset: wire.offset,
      respond: (value) => answer(value),
      fail: () => answer(),
    };
  }
}
