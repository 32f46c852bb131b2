/**
 * The soak's judge: a verified outcome is accepted only with the phone's own word that it shared a valid,
 * approved credential and the screen showing exactly the released elements with the holder's values; a
 * declined, expired or tampered presentation is never verified; each fault allows only its result kinds.
 */
import { describe, expect, it } from 'vitest';
import type { OutcomeView } from '../../../src/common/kiosk-view.js';
import type { VerificationReport } from '../../../src/kiosk/kiosk.js';
import type { PhoneOutcomeSummary } from '../../../src/qa/index.js';
import { ageOn, judge, MDL_NAMESPACE, NO_FACTS, type HolderTruth } from '../../../tools/soak/oracle.js';
import type { Fault, RunPlan } from '../../../tools/soak/plan.js';

const PORTRAIT = Uint8Array.from([0xff, 0xd8, 1, 2, 3, 4, 5, 0xff, 0xd9]);
const TRUTH: HolderTruth = {
  strings: { family_name: 'Doe', given_name: 'Jane', document_number: 'D1234567', birth_date: '1990-04-12' },
  birthDate: '1990-04-12',
  portraits: { jpeg: PORTRAIT, jpeg2000: Uint8Array.from([0, 0, 0, 12]) },
};
const AT = new Date('2026-01-15T12:00:00Z');

function plan(fault: Fault, engagement: 'qr' | 'nfc' = 'qr'): RunPlan {
  return { index: 1, flow: { engagement, phone: 'android', profile: 'identity', deviceAuth: 'signature', portrait: 'jpeg' }, fault };
}

const SHARED: PhoneOutcomeSummary = {
  kind: 'shared',
  engagement: 'qr',
  bleMode: 'peripheral_server',
  reason: undefined,
  detail: undefined,
  sharedElements: ['family_name', 'portrait', 'age_over_21'].map((e) => `${MDL_NAMESPACE}/${e}`),
};

function outcome(patch: Partial<OutcomeView> = {}): OutcomeView {
  return {
    verdict: 'verified',
    reasons: [],
    response: { [MDL_NAMESPACE]: { family_name: 'Doe', portrait: Buffer.from(PORTRAIT).toString('base64'), age_over_21: true } },
    docTypes: ['org.iso.18013.5.1.mDL'],
    issuerAuthentication: 'Valid',
    deviceAuthentication: 'Valid',
    errors: {},
    warnings: {},
    source: 'complete',
    answer: { kind: 'age', threshold: 21, result: 'met', missing: [] },
    ...patch,
  };
}

function report(patch: Partial<VerificationReport> = {}): VerificationReport {
  return {
    transport: 'qr',
    sessionId: 's',
    result: 'complete',
    outcome: outcome(),
    error: null,
    durationMs: 10,
    apdus: 0,
    bleMessages: 4,
    ...patch,
  };
}

const problemOf = (v: ReturnType<typeof judge>): string => (v.ok ? '' : v.problem);

describe('soak judge: verified', () => {
  it("accepts a verified outcome with the released elements and the holder's values", () => {
    expect(judge(plan({ kind: 'none' }), report(), SHARED, NO_FACTS, TRUTH, AT)).toEqual({ ok: true });
  });

  it('refuses verified for a declined request, an expired or a tampered credential (FALSE VERIFIED)', () => {
    for (const fault of [
      { kind: 'phone_decline' },
      { kind: 'credential', variant: 'expired' },
      { kind: 'credential', variant: 'tampered' },
    ] as const) {
      expect(problemOf(judge(plan(fault), report(), SHARED, NO_FACTS, TRUTH, AT))).toMatch(/^FALSE VERIFIED/);
    }
  });

  it('refuses verified when the phone did not share, or an authentication is not Valid, or errors are reported', () => {
    const aborted: PhoneOutcomeSummary = { ...SHARED, kind: 'aborted', reason: 'ble_drop', sharedElements: [] };
    expect(problemOf(judge(plan({ kind: 'none' }), report(), aborted, NO_FACTS, TRUTH, AT))).toMatch(
      /FALSE VERIFIED: the phone did not share/,
    );
    expect(problemOf(judge(plan({ kind: 'none' }), report(), undefined, NO_FACTS, TRUTH, AT))).toMatch(/FALSE VERIFIED/);
    expect(
      problemOf(
        judge(plan({ kind: 'none' }), report({ outcome: outcome({ deviceAuthentication: 'Unchecked' }) }), SHARED, NO_FACTS, TRUTH, AT),
      ),
    ).toMatch(/FALSE VERIFIED: issuer Valid, device Unchecked/);
    expect(
      problemOf(judge(plan({ kind: 'none' }), report({ outcome: outcome({ errors: { x: 1 } }) }), SHARED, NO_FACTS, TRUTH, AT)),
    ).toMatch(/FALSE VERIFIED: errors/);
  });

  it("refuses a response that is not what the phone released or not the holder's values", () => {
    const values = (v: Record<string, unknown>): VerificationReport => report({ outcome: outcome({ response: { [MDL_NAMESPACE]: v } }) });
    const portrait = Buffer.from(PORTRAIT).toString('base64');
    expect(problemOf(judge(plan({ kind: 'none' }), values({ family_name: 'Doe', portrait }), SHARED, NO_FACTS, TRUTH, AT))).toMatch(
      /differ from what the phone released/,
    );
    expect(
      problemOf(judge(plan({ kind: 'none' }), values({ family_name: 'Roe', portrait, age_over_21: true }), SHARED, NO_FACTS, TRUTH, AT)),
    ).toMatch(/family_name is not the holder's/);
    expect(
      problemOf(judge(plan({ kind: 'none' }), values({ family_name: 'Doe', portrait, age_over_21: false }), SHARED, NO_FACTS, TRUTH, AT)),
    ).toMatch(/age_over_21 is false/);
    const other = Buffer.from([1, 2, 3]).toString('base64');
    expect(
      problemOf(
        judge(plan({ kind: 'none' }), values({ family_name: 'Doe', portrait: other, age_over_21: true }), SHARED, NO_FACTS, TRUTH, AT),
      ),
    ).toMatch(/portrait differs/);
  });

  it('ageOn counts whole years (the birthday itself included)', () => {
    expect(ageOn('1990-04-12', new Date('2011-04-11T23:59:59Z'))).toBe(20);
    expect(ageOn('1990-04-12', new Date('2011-04-12T00:00:00Z'))).toBe(21);
  });
});

describe('soak judge: rejected and failed runs', () => {
  const rejected = (errors: Record<string, unknown>, patch: Partial<OutcomeView> = {}): VerificationReport =>
    report({ outcome: outcome({ verdict: 'rejected', reasons: ['errors_reported'], errors, ...patch }) });

  it('a valid, approved credential rejected is a false rejection', () => {
    expect(problemOf(judge(plan({ kind: 'none' }), rejected({ validity: 'x' }), SHARED, NO_FACTS, TRUTH, AT))).toMatch(
      /valid, approved credential shown as rejected/,
    );
  });

  it('an expired credential must be rejected for its validity, a tampered one for data integrity, a decline with nothing disclosed', () => {
    expect(judge(plan({ kind: 'credential', variant: 'expired' }), rejected({ validity: 'x' }), SHARED, NO_FACTS, TRUTH, AT).ok).toBe(true);
    expect(
      problemOf(judge(plan({ kind: 'credential', variant: 'expired' }), rejected({ data_integrity: 'x' }), SHARED, NO_FACTS, TRUTH, AT)),
    ).toMatch(/without the validity error/);
    expect(
      judge(plan({ kind: 'credential', variant: 'tampered' }), rejected({ data_integrity: 'x' }), SHARED, NO_FACTS, TRUTH, AT).ok,
    ).toBe(true);
    const declined = rejected({}, { response: {}, issuerAuthentication: 'Unchecked', deviceAuthentication: 'Unchecked' });
    expect(
      judge(plan({ kind: 'phone_decline' }), declined, { ...SHARED, kind: 'declined', sharedElements: [] }, NO_FACTS, TRUTH, AT).ok,
    ).toBe(true);
    expect(
      problemOf(judge(plan({ kind: 'phone_decline' }), rejected({}, { issuerAuthentication: 'Unchecked' }), SHARED, NO_FACTS, TRUTH, AT)),
    ).toMatch(/declined, yet data disclosed/);
  });

  it('each fault allows only its result kinds', () => {
    const error = (result: VerificationReport['result'], code: string): VerificationReport =>
      report({ result, outcome: null, error: { code, detail: 'd', retryable: true } });
    expect(problemOf(judge(plan({ kind: 'none' }), error('timeout', 'timeout'), SHARED, NO_FACTS, TRUTH, AT))).toMatch(/expected complete/);
    expect(
      judge(
        plan({ kind: 'socket_drop', phase: 'ble_transfer', how: 'close' }),
        error('dropped', 'connection_lost'),
        undefined,
        NO_FACTS,
        TRUTH,
        AT,
      ).ok,
    ).toBe(true);
    expect(
      problemOf(
        judge(
          plan({ kind: 'socket_drop', phase: 'complete', how: 'close' }),
          error('dropped', 'connection_lost'),
          SHARED,
          NO_FACTS,
          TRUTH,
          AT,
        ),
      ),
    ).toMatch(/expected recovered/);
    expect(
      judge(
        plan({ kind: 'socket_drop', phase: 'complete', how: 'terminate' }),
        report({ result: 'recovered', outcome: outcome({ source: 'recovered' }) }),
        SHARED,
        NO_FACTS,
        TRUTH,
        AT,
      ).ok,
    ).toBe(true);
    const aborted: PhoneOutcomeSummary = { ...SHARED, kind: 'aborted', reason: 'ble_drop', sharedElements: [] };
    expect(
      judge(plan({ kind: 'ble_drop', afterChunks: 1 }), error('ble_link_lost', 'ble_link_lost'), aborted, NO_FACTS, TRUTH, AT).ok,
    ).toBe(true);
    // A drop past the phone's last chunk changes nothing: the phone shared, so the run must complete.
    expect(
      problemOf(judge(plan({ kind: 'ble_drop', afterChunks: 99 }), error('ble_link_lost', 'ble_link_lost'), SHARED, NO_FACTS, TRUTH, AT)),
    ).toMatch(/expected complete/);
    expect(
      judge(
        plan({ kind: 'card_lifted', afterApdu: 2 }, 'nfc'),
        error('timeout', 'timeout'),
        undefined,
        { ...NO_FACTS, liftedBeforeHandover: true },
        TRUTH,
        AT,
      ).ok,
    ).toBe(true);
    expect(
      judge(plan({ kind: 'backend_offline_tap', forMs: 6_000 }), error('not_ready', 'backend_unavailable'), undefined, NO_FACTS, TRUTH, AT)
        .ok,
    ).toBe(true);
    const offline = { kind: 'backend_offline_run', afterMs: 0, forMs: 500 } as const;
    expect(judge(plan(offline), error('dropped', 'connection_lost'), SHARED, { ...NO_FACTS, offline: 'during_run' }, TRUTH, AT).ok).toBe(
      true,
    );
    expect(problemOf(judge(plan(offline), report(), SHARED, { ...NO_FACTS, offline: 'during_run' }, TRUTH, AT))).toMatch(
      /expected dropped/,
    );
    expect(judge(plan(offline), report(), SHARED, { ...NO_FACTS, offline: 'before_session' }, TRUTH, AT).ok).toBe(true);
    expect(judge(plan(offline), report(), SHARED, { ...NO_FACTS, offline: 'after_complete' }, TRUTH, AT).ok).toBe(true);
    expect(
      judge(plan(offline), error('not_ready', 'backend_unavailable'), undefined, { ...NO_FACTS, offline: 'before_session' }, TRUTH, AT).ok,
    ).toBe(true);
    // A stalled first reply is "not answering" (timeouts.firstReplyMs), said with its error; a plain timeout is not it.
    const stall = { kind: 'backend_stall', delayMs: 4_000 } as const;
    expect(judge(plan(stall), error('not_answering', 'backend_not_answering'), undefined, NO_FACTS, TRUTH, AT).ok).toBe(true);
    expect(problemOf(judge(plan(stall), error('timeout', 'timeout'), undefined, NO_FACTS, TRUTH, AT))).toMatch(/expected not_answering/);
    expect(
      problemOf(judge(plan(stall), report({ result: 'not_answering', outcome: null, error: null }), undefined, NO_FACTS, TRUTH, AT)),
    ).toMatch(/without an error/);
  });

  it('a field drop that happened must have gone through "tap again"', () => {
    const fault: Fault = { kind: 'field_drop', atApdu: 3 };
    expect(problemOf(judge(plan(fault, 'nfc'), report(), SHARED, { ...NO_FACTS, fieldDropped: true }, TRUTH, AT))).toMatch(
      /never asked for the phone again/,
    );
    expect(judge(plan(fault, 'nfc'), report(), SHARED, { ...NO_FACTS, fieldDropped: true, sawAwaitingCard: true }, TRUTH, AT).ok).toBe(
      true,
    );
  });
});
