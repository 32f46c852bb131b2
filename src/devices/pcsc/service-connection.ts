/**
 * The adapter's PC/SC context. Established at start and re-established with exponential backoff while the
 * service is absent (0x8010001D) or after it was lost (0x80100013: a pcscd restart ends every reader of the
 * old instance for good: the old context and its readers never work again, a new context must be made).
 * The old instance is closed; its late "Command cancelled" is swallowed. The readers a context announces
 * go to the `ReaderRegistry`.
 *
 * The retry timer is unref'd so an idle adapter never keeps a process alive.
 */
import type { Availability } from '../ports.js';
import { errorMessage } from '../shared/abort.js';
import { closeLater } from './binding-close.js';
import { codeVariant } from './failure-variant.js';
import { PcscBindingUnavailableError, type BindingContext, type BindingFactory, type BindingReader } from './pcsc-binding.js';
import type { PcscLog, ReaderSettings } from './reader-options.js';
import type { ReaderRegistry } from './reader-registry.js';
import { formatScardCode, parseScardCode, Scard, type ScardPlatform } from './scard-errors.js';
import { workerBindingFactory } from './worker-binding.js';

export interface ServiceConnectionOptions {
  /** The binding; default: the `smartcard` addon on a worker thread (`worker-binding.ts`), made on first use. */
  readonly binding: BindingFactory | undefined;
  readonly retry: Pick<ReaderSettings, 'serviceRetryMinMs' | 'serviceRetryMaxMs'>;
  readonly log: PcscLog;
  readonly platform: ScardPlatform;
  readonly readers: ReaderRegistry;
  /** The adapter's availability as far as the service decides it (not installed, down, connected). */
  readonly report: (availability: Availability) => void;
}

export class ServiceConnection {
  private factory: BindingFactory | undefined;
  private context: BindingContext | undefined;
  /** A context is being made on the binding's thread (one at a time). */
  private establishing = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private retryAttempts = 0;
  private closed = false;

  constructor(private readonly options: ServiceConnectionOptions) {
    this.factory = options.binding;
  }

  /** Whether a context is established now. */
  get connected(): boolean {
    return this.context !== undefined;
  }

  /** Makes a context, now and after every loss, until `close`. */
  start(): void {
    this.establish();
  }

  /** Stops retrying, forgets the context and its readers, and disposes of the binding. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    await this.dropContext('Cancelled');
    await this.factory?.dispose?.();
  }

  private establish(): void {
    if (this.closed || this.establishing) return;
    try {
      this.factory ??= workerBindingFactory();
    } catch (e) {
      const detail = errorMessage(e);
      this.options.log.warn({ event: 'pcsc_binding_unavailable' }, detail);
      this.options.report({ usable: false, reason: 'not_installed', detail });
      return;
    }
    let made: BindingContext | Promise<BindingContext>;
    try {
      made = this.factory();
    } catch (e) {
      this.establishFailed(e);
      return;
    }
    if (!(made instanceof Promise)) {
      this.adopt(made);
      return;
    }
    this.establishing = true;
    made.then(
      (context) => {
        this.establishing = false;
        // Closed while the context was being made: it is not wanted.
        if (this.closed) context.close();
        else this.adopt(context);
      },
      (e: unknown) => {
        this.establishing = false;
        if (!this.closed) this.establishFailed(e);
      },
    );
  }

  private establishFailed(e: unknown): void {
    const { log, report } = this.options;
    if (e instanceof PcscBindingUnavailableError) {
      log.warn({ event: 'pcsc_binding_unavailable' }, e.message);
      report({ usable: false, reason: 'not_installed', detail: e.message });
      return;
    }
    const code = parseScardCode(e);
    const variant = codeVariant(code, this.options.platform);
    report({ usable: false, reason: 'service_down', detail: `the PC/SC service is not available (${variant})` });
    log.warn(
      { event: 'pcsc_service_unavailable', code: code === undefined ? undefined : formatScardCode(code), variant },
      'PC/SC service not available; retrying',
    );
    this.scheduleRetry();
  }

  private adopt(context: BindingContext): void {
    this.context = context;
    this.options.readers.startOrphanClock();
    context.on('error', (error) => this.onContextError(context, error));
    context.on('reader', (reader) => this.onReader(context, reader));
    this.options.report(this.options.readers.availability()); // no reader listed yet: waiting for one
    this.options.log.info({ event: 'pcsc_context_established' }, 'PC/SC service connected');
  }

  private onReader(context: BindingContext, reader: BindingReader): void {
    // A reader of an instance already given up (or announced after close) is only closed.
    if (this.options.readers.add(reader, context === this.context && !this.closed)) this.retryAttempts = 0;
  }

  private scheduleRetry(): void {
    if (this.closed || this.retryTimer !== undefined) return;
    const { serviceRetryMinMs, serviceRetryMaxMs } = this.options.retry;
    const delay = Math.min(serviceRetryMaxMs, serviceRetryMinMs * 2 ** Math.min(this.retryAttempts, 20));
    this.retryAttempts++;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.establish();
    }, delay);
    this.retryTimer.unref();
  }

  private onContextError(context: BindingContext, error: unknown): void {
    const code = parseScardCode(error);
    if (context !== this.context || code === Scard.CANCELLED) return; // a closed instance, or our own close()
    const variant = codeVariant(code, this.options.platform);
    this.options.log.warn(
      { event: 'pcsc_context_lost', code: code === undefined ? undefined : formatScardCode(code), variant },
      'PC/SC service lost; reconnecting',
    );
    // Any failure of the monitor ends it for good in this binding, so the context is rebuilt either way.
    void this.dropContext(variant).then(() => {
      if (this.closed) return;
      this.options.report({ usable: false, reason: 'service_down', detail: `the PC/SC service was lost (${variant})` });
      this.scheduleRetry();
    });
  }

  /** Forgets the context and its readers: presences end (or wait as orphans), handles are dropped, the binding is closed. */
  private async dropContext(reason: string): Promise<void> {
    const context = this.context;
    this.context = undefined;
    await this.options.readers.retireAll(reason, !this.closed);
    if (context) await closeLater('PC/SC context', context, this.options.log);
  }
}
