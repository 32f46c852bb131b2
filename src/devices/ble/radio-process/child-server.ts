/**
 * The radio process's side of the channel: serves the BLE ports of a stack built in this process (noble
 * and bleno, `loadPlatformBle`; QA builds them over the radio link) to the kiosk (protocol.ts). Every
 * incoming message is validated; a bad one is reported in the log and dropped. Runs under Node's `fork`
 * (`process.send`) and in an Electron utility process (`process.parentPort`) alike.
 */
import type { BleCentral, BleCentralLink, BlePeripheral, BlePeripheralSession, PeripheralEvent } from '../../ports.js';
import { errorMessage } from '../../shared/abort.js';
import { channelOfThisProcess as sharedChannel, type ChildChannel as SharedChildChannel } from '../../shared/child-channel.js';
import type { LibraryLog } from '../library-console.js';
import { ParentMessage, describeIssue, type ChildMessage, type PeripheralEventWire, type RadioInit } from './protocol.js';
import { toWire } from './wire-errors.js';

/** What the child serves: `PlatformBle` fits. */
export interface RadioStack {
  readonly central?: BleCentral;
  readonly peripheral?: BlePeripheral;
  readonly problems: readonly string[];
  close(): Promise<void>;
}

export type ChildChannel = SharedChildChannel<ChildMessage>;

export interface ServeRadioOptions {
  /** QA-only commands (a planted crash, stray output); the production child has none. */
  readonly onQa?: (command: string) => void;
  /** Ends the process after `shutdown` (default: process.exit(0)). */
  readonly exit?: () => void;
  /** Bound on the kiosk's answer to a phone's read; the read fails after it (the phone's ATT timeout is 30 s). */
  readonly readAnswerMs?: number;
}

/** The channel to the parent in this process: Electron's `parentPort`, or Node's IPC. */
export function channelOfThisProcess(): ChildChannel {
  return sharedChannel<ChildMessage>('the radio process');
}

/** A log that goes to the parent as `log` messages (the libraries' console, routed in loadPlatformBle). */
export function parentLog(channel: ChildChannel): LibraryLog {
  const send = (level: 'info' | 'warn', fields: object, message: string): void => {
    const { event, library } = fields as { event?: unknown; library?: unknown };
    channel.send({
      t: 'log',
      level,
      event: typeof event === 'string' ? event.slice(0, 64) : 'ble_library_output',
      // Which library printed it (library-console.ts tells), so the parent's record says so too.
      ...(library === 'noble' || library === 'bleno' ? { library } : {}),
      message: message.slice(0, 2_000),
    });
  };
  return { info: (fields, message) => send('info', fields, message), warn: (fields, message) => send('warn', fields, message) };
}

export function serveRadio(
  channel: ChildChannel,
  build: (init: RadioInit, log: LibraryLog) => RadioStack | Promise<RadioStack>,
  options: ServeRadioOptions = {},
): void {
  const log = parentLog(channel);
  const readAnswerMs = options.readAnswerMs ?? 10_000;
  let stack: RadioStack | undefined;
  const links = new Map<number, BleCentralLink>();
  const sessions = new Map<number, BlePeripheralSession>();
  const reads = new Map<string, { respond(v: Uint8Array): void; fail(): void; timer: NodeJS.Timeout }>();
  const controllers = new Map<number, AbortController>();
  let nextRead = 1;

  const reply = <T>(id: number, work: (signal: AbortSignal) => Promise<T>, ok: (value: T) => ChildMessage): void => {
    const controller = new AbortController();
    controllers.set(id, controller);
    work(controller.signal)
      .then(
        (value) => channel.send(ok(value)),
        (e: unknown) => channel.send({ t: 'error', id, error: toWire(e) }),
      )
      .finally(() => controllers.delete(id));
  };
  const missing = (what: string): Promise<never> => Promise.reject(new Error(`the radio process has no ${what}`));

  const wireEvent = (session: number, event: PeripheralEvent): PeripheralEventWire => {
    if (event.kind !== 'read')
      return event.kind === 'write' ? { kind: 'write', characteristicUuid: event.characteristicUuid, data: event.data } : event;
    const read = nextRead++;
    const key = `${session}:${read}`;
    // The kiosk answers within its own bound; this one only keeps a lost answer from holding the phone.
    const timer = setTimeout(() => {
      reads.delete(key);
      event.fail();
    }, readAnswerMs);
    reads.set(key, { respond: (v) => event.respond(v), fail: () => event.fail(), timer });
    return { kind: 'read', characteristicUuid: event.characteristicUuid, offset: event.offset, read };
  };

  const shutdown = async (): Promise<void> => {
    for (const controller of controllers.values()) controller.abort();
    for (const { timer } of reads.values()) clearTimeout(timer);
    await Promise.allSettled([...links.values()].map((l) => l.close()));
    await Promise.allSettled([...sessions.values()].map((s) => s.close()));
    await stack?.close().catch(() => undefined);
    (options.exit ?? (() => process.exit(0)))();
  };

  const handle = async (message: ParentMessage): Promise<void> => {
    switch (message.t) {
      case 'init': {
        if (stack) return;
        let ready: RadioStack;
        try {
          ready = await build(message.init, log);
        } catch (e) {
          ready = { problems: [`the radio stack could not be built: ${errorMessage(e)}`], close: () => Promise.resolve() };
        }
        stack = ready;
        for (const role of ['central', 'peripheral'] as const) {
          ready[role]?.onAvailabilityChange?.((availability) =>
            channel.send({ t: 'availability', role, availability: { ...availability } }),
          );
        }
        channel.send({
          t: 'ready',
          ...(ready.central ? { central: { ...ready.central.availability() } } : {}),
          ...(ready.peripheral ? { peripheral: { ...ready.peripheral.availability() } } : {}),
          problems: ready.problems.slice(0, 8).map((p) => p.slice(0, 2_000)),
        });
        return;
      }
      case 'ping':
        channel.send({ t: 'pong', id: message.id });
        return;
      case 'connect': {
        const { id } = message;
        reply(
          id,
          (signal) =>
            stack?.central
              ? stack.central.connect(
                  message.profile,
                  {
                    onNotification: (uuid, data) => channel.send({ t: 'notification', link: id, uuid, data }),
                    onDisconnect: (reason) => {
                      links.delete(id);
                      channel.send({ t: 'disconnect', link: id, reason: reason.slice(0, 2_000) });
                    },
                  },
                  signal,
                )
              : missing('central'),
          (link) => {
            links.set(id, link);
            return { t: 'ok', id, link: id, ...(link.mtu === undefined ? {} : { mtu: link.mtu }) };
          },
        );
        return;
      }
      case 'advertise': {
        const { id } = message;
        reply(
          id,
          (signal) =>
            stack?.peripheral
              ? stack.peripheral.advertise(
                  message.profile,
                  (event) => channel.send({ t: 'event', session: id, event: wireEvent(id, event) }),
                  signal,
                )
              : missing('peripheral'),
          (session) => {
            sessions.set(id, session);
            return { t: 'ok', id, link: id };
          },
        );
        return;
      }
      case 'abort':
        controllers.get(message.id)?.abort();
        return;
      case 'write': {
        const link = links.get(message.link);
        reply(
          message.id,
          (signal) => (link ? link.write(message.uuid, message.data, signal) : missing('such link (it closed)')),
          () => ({ t: 'ok', id: message.id }),
        );
        return;
      }
      case 'notify': {
        const session = sessions.get(message.session);
        reply(
          message.id,
          (signal) => (session ? session.notify(message.uuid, message.data, signal) : missing('such session (it closed)')),
          () => ({ t: 'ok', id: message.id }),
        );
        return;
      }
      case 'flush': {
        const target = links.get(message.link) ?? sessions.get(message.link);
        reply(
          message.id,
          (signal) => target?.flush?.(signal) ?? Promise.resolve(),
          () => ({ t: 'ok', id: message.id }),
        );
        return;
      }
      case 'close': {
        const link = links.get(message.link);
        const session = sessions.get(message.link);
        links.delete(message.link);
        sessions.delete(message.link);
        for (const [key, read] of reads) {
          if (key.startsWith(`${message.link}:`)) {
            clearTimeout(read.timer);
            reads.delete(key);
            read.fail();
          }
        }
        reply(
          message.id,
          async () => {
            await link?.close();
            await session?.close();
          },
          () => ({ t: 'ok', id: message.id }),
        );
        return;
      }
      case 'read-answer': {
        const key = `${message.session}:${message.read}`;
        const read = reads.get(key);
        if (!read) return; // answered late: the bound above already failed it
        reads.delete(key);
        clearTimeout(read.timer);
        if (message.value) read.respond(message.value);
        else read.fail();
        return;
      }
      case 'shutdown':
        await shutdown();
        return;
      case 'qa':
        if (options.onQa) options.onQa(message.command);
        else log.warn({ event: 'radio_process_refused' }, `the production radio process has no QA commands (${message.command})`);
        return;
    }
  };

  channel.onMessage((raw) => {
    const parsed = ParentMessage.safeParse(raw);
    if (!parsed.success) {
      log.warn(
        { event: 'radio_process_bad_message' },
        `the radio process dropped a message from the kiosk: ${describeIssue(parsed.error)}`,
      );
      return;
    }
    handle(parsed.data).catch((e: unknown) => log.warn({ event: 'radio_process_failed' }, errorMessage(e)));
  });
}
