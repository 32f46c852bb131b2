/**
 * Words for the keys the host sends to the diagnostics screen: backend failure kinds and stages, self-test
 * status keys (src/service/
 * self-test.ts and the device adapters' availability reasons) and count names (src/service/diagnostics.ts:
 * `verifications`, `result.*`, `transport.*`, `verdict.*`, `answer.*`, `reason.*`, `error.*`, `scan.<source>.<result>`,
 * `renderer.*` for the screen's own forwarded errors).
 * A key the screen has no words for is shown as it came (staff can still look it up).
 */
import { outcomeResources } from '../outcome/locales.js';
import { commonEn } from '../i18n/common-en.js';
import { knownEvent } from './event-locales.js';

type T = (key: string, options?: Record<string, unknown>) => string;

const known = (table: object, key: string): boolean => Object.hasOwn(table, key);

/** A backend failure kind (src/common/backend-failure-kinds.ts) in words; an unknown one as it came. */
export function failureKindText(kind: string, t: T): string {
  return known(commonEn.diagnostics.backend.kind, kind) ? t(`diagnostics.backend.kind.${kind}`) : kind;
}

/** Where a backend failure happened, in words. */
export function failureStageText(stage: string, t: T): string {
  return known(commonEn.diagnostics.backend.stageName, stage) ? t(`diagnostics.backend.stageName.${stage}`) : stage;
}

/** A self-test status key in words; unknown keys as they are. */
export function selfTestStatusText(status: string, t: T): string {
  return known(commonEn.diagnostics.status, status) ? t(`diagnostics.status.${status}`) : status;
}

function countPart(group: string, item: string, t: T): string | undefined {
  const d = commonEn.diagnostics;
  switch (group) {
    case 'result':
      return known(d.countResult, item) ? t(`diagnostics.countResult.${item}`) : undefined;
    case 'transport':
      return known(d.countTransport, item) ? t(`diagnostics.countTransport.${item}`) : undefined;
    case 'verdict':
      return known(d.countVerdict, item) ? t(`diagnostics.countVerdict.${item}`) : undefined;
    case 'answer':
      return known(d.countAnswer, item) ? t(`diagnostics.countAnswer.${item}`) : undefined;
    case 'reason':
      // The outcome screen's words for the core's rejection reasons.
      return known(outcomeResources.en.reason, item) && item !== 'other' ? t(`outcome:reason.${item}`) : undefined;
    case 'error':
      return known(d.countError, item) ? t(`diagnostics.countError.${item}`) : undefined;
    case 'renderer':
      return known(d.countRenderer, item) ? t(`diagnostics.countRenderer.${item}`) : undefined;
    default:
      return undefined;
  }
}

/** A diagnostics count's name in words; unknown names as they are. */
export function countLabel(name: string, t: T): string {
  if (known(commonEn.diagnostics.countName, name)) return t(`diagnostics.countName.${name}`);
  const dot = name.indexOf('.');
  if (dot <= 0) return name;
  const group = name.slice(0, dot);
  const rest = name.slice(dot + 1);
  if (group === 'scan') {
    const [source = '', result = '', ...more] = rest.split('.');
    if (more.length > 0 || !known(commonEn.diagnostics.countScanSource, source) || !known(commonEn.diagnostics.countScanResult, result))
      return name;
    return t('diagnostics.countScan', {
      source: t(`diagnostics.countScanSource.${source}`),
      result: t(`diagnostics.countScanResult.${result}`),
    });
  }
  if (!known(commonEn.diagnostics.countGroup, group)) return name;
  const item = countPart(group, rest, t);
  return item === undefined ? name : t('diagnostics.countFormat', { group: t(`diagnostics.countGroup.${group}`), name: item });
}

/** A recent event's name in words; a name the screen has no line for gets the generic line (the code is shown beside it either way). */
export function eventText(name: string, t: T): string {
  return knownEvent(name) ? t(`events:line.${name}`) : t('events:unknown');
}
