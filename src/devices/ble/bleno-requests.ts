/**
 * The ATT answers to the phone's reads and writes (bleno-peripheral.ts header): the specs' permissions
 * enforced here, since bleno has none (a read without `readable` is 0x02, a write without `writeable`
 * 0x03); the offset-0 read reported and its value kept for the Read Blobs of the same long read; a read
 * the consumer has not answered ended when the phone leaves or the session closes.
 */
import type { PeripheralEvent } from '../ports.js';
import type { BlenoReadCallback, BlenoWriteCallback } from './bleno-types.js';
import type { Served } from './bleno-service.js';

/** ATT error codes (Core Vol 3 Part F §3.4.1.1) the adapter answers with. */
const ATT_SUCCESS = 0x00;
const ATT_READ_NOT_PERMITTED = 0x02;
const ATT_WRITE_NOT_PERMITTED = 0x03;
const ATT_INVALID_OFFSET = 0x07;
const ATT_UNLIKELY_ERROR = 0x0e;
/** The data of a refused read (bleno-types.ts `BlenoReadCallback`). */
const NO_DATA = Buffer.alloc(0);

/** A read from a central that is not the phone (or after the session closed). */
export function refuseRead(callback: BlenoReadCallback): void {
  callback(ATT_UNLIKELY_ERROR, NO_DATA);
}

/** A write from a central that is not the phone (or after the session closed). */
export function refuseWrite(callback: BlenoWriteCallback): void {
  callback(ATT_UNLIKELY_ERROR);
}

interface PendingRead {
  /** Ends the read without an answer to bleno unless the link is still up (then 0x0E). */
  abandon(linkUp: boolean): void;
}

/** Answers the phone's requests of one session; `report` hands each reported one to the consumer. */
export class PhoneRequests {
  private readonly pendingReads = new Set<PendingRead>();
  /** The value answered for the last offset-0 read of each characteristic, for its Read Blobs. */
  private readonly readCache = new Map<string, Uint8Array>();

  constructor(private readonly report: (event: PeripheralEvent) => void) {}

  read(served: Served, offset: number, callback: BlenoReadCallback): void {
    if (!served.spec.permissions.includes('readable')) {
      callback(ATT_READ_NOT_PERMITTED, NO_DATA);
      return;
    }
    const answerFrom = (value: Uint8Array): void => {
      if (offset > value.length) callback(ATT_INVALID_OFFSET, NO_DATA);
      else callback(ATT_SUCCESS, Buffer.from(value.subarray(offset)));
    };
    if (offset > 0) {
      const cached = this.readCache.get(served.key);
      if (cached) {
        answerFrom(cached);
        return;
      }
    } else {
      this.readCache.delete(served.key);
    }
    let done = false;
    const finish = (): boolean => {
      if (done) return false;
      done = true;
      this.pendingReads.delete(pending);
      return true;
    };
    const pending: PendingRead = {
      abandon: (linkUp) => {
        if (finish() && linkUp) callback(ATT_UNLIKELY_ERROR, NO_DATA);
      },
    };
    this.pendingReads.add(pending);
    this.report({
      kind: 'read',
      characteristicUuid: served.uuid,
      offset,
      respond: (value) => {
        if (!finish()) return;
        const copy = new Uint8Array(value);
        if (offset === 0) this.readCache.set(served.key, copy);
        answerFrom(copy);
      },
      fail: () => {
        if (finish()) callback(ATT_UNLIKELY_ERROR, NO_DATA);
      },
    });
  }

  write(served: Served, data: Buffer, offset: number, callback: BlenoWriteCallback): void {
    if (!served.spec.permissions.includes('writeable')) {
      callback(ATT_WRITE_NOT_PERMITTED);
      return;
    }
    // Only prepared writes carry an offset, and they need the `write` property no spec names.
    if (offset !== 0) {
      callback(ATT_INVALID_OFFSET);
      return;
    }
    this.report({ kind: 'write', characteristicUuid: served.uuid, data: new Uint8Array(data) });
    callback(ATT_SUCCESS);
  }

  /**
   * Ends every read the consumer has not answered: with 0x0E while the link is up; silently once the phone
   * is gone (bleno's GATT has forgotten the connection: a late read callback would throw inside it).
   */
  abandonReads(linkUp: boolean): void {
    for (const read of [...this.pendingReads]) read.abandon(linkUp);
  }

  /** Forgets the kept read values: the next phone's Read Blobs are not answered from them. */
  forgetValues(): void {
    this.readCache.clear();
  }
}
