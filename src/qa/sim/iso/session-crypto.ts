/**
 * Session encryption of ISO 18013-5 §9.1.1 (as Multipaz `SessionEncryption.kt` does it; checked against
 * Annex D in test/unit/sim/iso/annex-d.test.ts):
 *
 *   Z_AB     = ECDH(own private, peer public), x-coordinate (32 bytes for P-256)
 *   salt     = SHA-256(SessionTranscriptBytes)            ; the tag-24-wrapped bytes (d8 18 59 …)
 *   SKReader = HKDF-SHA256(Z_AB, salt, "SKReader", 32)    ; reader → mdoc
 *   SKDevice = HKDF-SHA256(Z_AB, salt, "SKDevice", 32)    ; mdoc → reader
 *   AES-256-GCM, no AAD, 16-byte tag appended to the ciphertext
 *   IV = 00000000 || identifier (reader 00000000, mdoc 00000001) || counter (uint32 BE)
 *   counter: 1 for each sender's first message, +1 per message; one counter per direction
 *
 * Also EMacKey (ISO 18013-5 §9.1.3.5) and the BLE Ident value (ISO 18013-5 §8.3.3.1.1).
 */
import { createCipheriv, createDecipheriv, createHash, diffieHellman, hkdfSync, type KeyObject } from 'node:crypto';

export type SessionRole = 'reader' | 'device';

/** IV identifier of the sender (ISO 18013-5 §9.1.1.5). */
export const IV_IDENTIFIER: Readonly<Record<SessionRole, number>> = { reader: 0, device: 1 };

const KEY_LENGTH = 32;
const TAG_LENGTH = 16;
const MAX_COUNTER = 0xffffffff;

export class SessionCryptoError extends Error {
  override readonly name = 'SessionCryptoError';
}

/** ECDH shared secret (x-coordinate). */
export function ecdhSharedSecret(privateKey: KeyObject, publicKey: KeyObject): Uint8Array {
  return Uint8Array.from(diffieHellman({ privateKey, publicKey }));
}

export function hkdfSha256(ikm: Uint8Array, salt: Uint8Array, info: string, length: number): Uint8Array {
  return new Uint8Array(hkdfSync('sha256', ikm, salt, Buffer.from(info, 'utf8'), length));
}

export function sha256(bytes: Uint8Array): Uint8Array {
  return Uint8Array.from(createHash('sha256').update(bytes).digest());
}

export interface KeyAgreementInput {
  /** Own private key (EReaderKey on the reader, EDeviceKey — or SDeviceKey for EMacKey — on the mdoc). */
  readonly privateKey: KeyObject;
  /** Peer public key. */
  readonly publicKey: KeyObject;
  /** SessionTranscriptBytes (tag-24 wrapped). */
  readonly sessionTranscriptBytes: Uint8Array;
}

export interface SessionKeys {
  readonly skReader: Uint8Array;
  readonly skDevice: Uint8Array;
}

export function deriveSessionKeys(input: KeyAgreementInput): SessionKeys {
  const z = ecdhSharedSecret(input.privateKey, input.publicKey);
  const salt = sha256(input.sessionTranscriptBytes);
  return { skReader: hkdfSha256(z, salt, 'SKReader', KEY_LENGTH), skDevice: hkdfSha256(z, salt, 'SKDevice', KEY_LENGTH) };
}

/**
 * EMacKey = HKDF-SHA256(ECDH(SDeviceKey, EReaderKey), SHA-256(SessionTranscriptBytes), "EMacKey", 32).
 * The mdoc passes SDeviceKey (private) + EReaderKey (public); the reader EReaderKey (private) + SDeviceKey
 * (public, from the MSO deviceKeyInfo).
 */
export function deriveEMacKey(input: KeyAgreementInput): Uint8Array {
  const z = ecdhSharedSecret(input.privateKey, input.publicKey);
  return hkdfSha256(z, sha256(input.sessionTranscriptBytes), 'EMacKey', KEY_LENGTH);
}

/**
 * BLE Ident characteristic value: HKDF-SHA256(IKM = EDeviceKeyBytes (the tag-24 item, d8 18 58 4b …),
 * salt empty, info "BLEIdent", 16 bytes), as Multipaz `checkReaderIdentMatches()` and isomdl
 * `calculate_ble_ident()` compute it.
 */
export function bleIdent(eDeviceKeyBytes: Uint8Array): Uint8Array {
  return hkdfSha256(eDeviceKeyBytes, new Uint8Array(0), 'BLEIdent', 16);
}

/** 12-byte GCM IV for a message sent by `sender` with `counter`. */
export function sessionIv(sender: SessionRole, counter: number): Uint8Array {
  if (!Number.isInteger(counter) || counter < 1 || counter > MAX_COUNTER) {
    throw new SessionCryptoError(`message counter out of range: ${counter}`);
  }
  const iv = new Uint8Array(12);
  const view = new DataView(iv.buffer);
  view.setUint32(4, IV_IDENTIFIER[sender]);
  view.setUint32(8, counter);
  return iv;
}

function checkKey(key: Uint8Array): void {
  if (key.length !== KEY_LENGTH) throw new SessionCryptoError(`session key must be ${KEY_LENGTH} bytes`);
}

/** AES-256-GCM encryption of one message: ciphertext || tag. */
export function sessionEncrypt(key: Uint8Array, sender: SessionRole, counter: number, plaintext: Uint8Array): Uint8Array {
  checkKey(key);
  const cipher = createCipheriv('aes-256-gcm', key, sessionIv(sender, counter), { authTagLength: TAG_LENGTH });
  return Uint8Array.from(Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]));
}

/** Decrypts ciphertext || tag; a wrong key, IV, counter or any altered byte throws `SessionCryptoError`. */
export function sessionDecrypt(key: Uint8Array, sender: SessionRole, counter: number, ciphertext: Uint8Array): Uint8Array {
  checkKey(key);
  if (ciphertext.length < TAG_LENGTH) throw new SessionCryptoError('ciphertext shorter than the GCM tag');
  const decipher = createDecipheriv('aes-256-gcm', key, sessionIv(sender, counter), { authTagLength: TAG_LENGTH });
  decipher.setAuthTag(ciphertext.subarray(ciphertext.length - TAG_LENGTH));
  try {
    return Uint8Array.from(Buffer.concat([decipher.update(ciphertext.subarray(0, ciphertext.length - TAG_LENGTH)), decipher.final()]));
  } catch {
    throw new SessionCryptoError(`decryption failed (message from ${sender}, counter ${counter})`);
  }
}

/**
 * One side's session cipher. The reader encrypts with SKReader (identifier 0) and decrypts with SKDevice
 * (identifier 1); the mdoc the reverse. Each direction's counter starts at 1 and advances after every
 * successful encryption or decryption. A failed decryption does not advance the receive counter (the
 * caller normally ends the session with status 10).
 */
export class SessionEncryption {
  readonly role: SessionRole;
  readonly #sendKey: Uint8Array;
  readonly #receiveKey: Uint8Array;
  #sendCounter = 1;
  #receiveCounter = 1;

  constructor(role: SessionRole, keys: SessionKeys) {
    checkKey(keys.skReader);
    checkKey(keys.skDevice);
    this.role = role;
    this.#sendKey = role === 'reader' ? keys.skReader : keys.skDevice;
    this.#receiveKey = role === 'reader' ? keys.skDevice : keys.skReader;
  }

  /** Reader side: own EReaderKey private key, the mdoc's EDeviceKey. */
  static forReader(input: {
    eReaderPrivateKey: KeyObject;
    eDevicePublicKey: KeyObject;
    sessionTranscriptBytes: Uint8Array;
  }): SessionEncryption {
    return new SessionEncryption(
      'reader',
      deriveSessionKeys({
        privateKey: input.eReaderPrivateKey,
        publicKey: input.eDevicePublicKey,
        sessionTranscriptBytes: input.sessionTranscriptBytes,
      }),
    );
  }

  /** mdoc side: own EDeviceKey private key, the reader's EReaderKey. */
  static forDevice(input: {
    eDevicePrivateKey: KeyObject;
    eReaderPublicKey: KeyObject;
    sessionTranscriptBytes: Uint8Array;
  }): SessionEncryption {
    return new SessionEncryption(
      'device',
      deriveSessionKeys({
        privateKey: input.eDevicePrivateKey,
        publicKey: input.eReaderPublicKey,
        sessionTranscriptBytes: input.sessionTranscriptBytes,
      }),
    );
  }

  private get peer(): SessionRole {
    return this.role === 'reader' ? 'device' : 'reader';
  }

  /** Counter the next outgoing message will use. */
  get nextSendCounter(): number {
    return this.#sendCounter;
  }

  /** Counter the next incoming message is expected to use. */
  get nextReceiveCounter(): number {
    return this.#receiveCounter;
  }

  encrypt(plaintext: Uint8Array): Uint8Array {
    const out = sessionEncrypt(this.#sendKey, this.role, this.#sendCounter, plaintext);
    this.#sendCounter++;
    return out;
  }

  decrypt(ciphertext: Uint8Array): Uint8Array {
    const out = sessionDecrypt(this.#receiveKey, this.peer, this.#receiveCounter, ciphertext);
    this.#receiveCounter++;
    return out;
  }
}
