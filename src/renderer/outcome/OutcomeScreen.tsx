/**
 * The outcome of a verification, for the customer and the staff member beside them.
 *
 * - The verdict cannot be misread: icon + word + colour (`verdict`, `data-verdict`), green only when the
 *   core's verdict is `verified` and nothing in the outcome contradicts it; "Not accepted" in red
 *   otherwise; an outcome that cannot be read at all is a neutral "ask staff", never green.
 * - For age requests the age answer is the headline (`age-answer`, `data-age`), with the document's
 *   authenticity as a separate, smaller, neutral line (never green beside a red answer); an unverified
 *   document never yields an age answer. The
 *   answer is the core's (`outcome.answer`), never worked out again here.
 * - A holder who shared nothing (declined on the phone) gets a neutral "You declined to share", not the
 *   red "not accepted" of a forged document, and "Try again" next to "Next customer".
 * - What the customer needs is in plain words; why a document was not accepted (the core's reasons, the
 *   backend's own messages) is behind "Details for staff".
 * - The portrait is large (canvas, `portrait`; marked "not verified" unless the verdict is), then every disclosed element with a human label
 *   (`element-row`, `data-element="<namespace>/<identifier>"`), the checks, the reasons and notes.
 * - A countdown to `clearsAt` and "Next customer" (`next-button`).
 */
import { useEffect, useId, useMemo, useRef, useState, type ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import type { OutcomeView } from '../../common/kiosk-view.js';
import { useAnnounce } from '../components/announcer.js';
import { secondsUntil, useNow } from '../components/use-now.js';
import { CellView } from './CellView.js';
import { outcomeResources } from './locales.js';
import { PortraitCanvas, type PortraitState } from './PortraitCanvas.js';
import {
  presentOutcome,
  type AgeAnswer,
  type AuthDisplay,
  type DisplayVerdict,
  type ElementRow,
  type Finding,
  type MissingRow,
  type OutcomeModel,
} from './present.js';
import './outcome.css';

export interface OutcomeScreenProps {
  readonly outcome: OutcomeView;
  /** When the core clears the outcome (ms since the epoch), or null when it does not say. */
  readonly clearsAt: number | null;
  onNext(): void;
  /** "Try again" for a holder who shared nothing: dismisses the outcome, the same customer goes on. */
  onTryAgain?(): void;
}

type IconShape = 'check' | 'cross' | 'question' | 'dash';

function Icon(props: { shape: IconShape }): ReactNode {
  return (
    <svg
      className="outcome-icon"
      viewBox="0 0 48 48"
      width="48"
      height="48"
      aria-hidden="true"
      focusable="false"
      fill="none"
      stroke="currentColor"
      strokeWidth="6"
      strokeLinecap="round"
      strokeLinejoin="round"
    >
      {props.shape === 'check' ? <path d="M10 25l9 9 19-20" /> : null}
      {props.shape === 'cross' ? <path d="M13 13l22 22M35 13L13 35" /> : null}
      {props.shape === 'question' ? <path d="M17 17a7 7 0 1 1 10 6c-2 1-3 2.5-3 5M24 36v.5" /> : null}
      {props.shape === 'dash' ? <path d="M12 24h24" /> : null}
    </svg>
  );
}

/** What the portrait's row says: where the photo is, or that it could not be shown. */
const PORTRAIT_ROW: Readonly<Record<PortraitState, string>> = {
  loading: 'portrait.loading',
  shown: 'portrait.shownAbove',
  failed: 'portrait.failed',
};

const VERDICT_ICON: Readonly<Record<DisplayVerdict, IconShape>> = {
  verified: 'check',
  rejected: 'cross',
  declined: 'dash',
  undetermined: 'question',
  unknown: 'question',
};
const AGE_ICON: Readonly<Record<AgeAnswer, IconShape>> = { yes: 'check', no: 'cross', unknown: 'question' };

function verdictText(t: (key: string) => string, verdict: DisplayVerdict, asDocumentLine: boolean): string {
  if (verdict === 'unknown') return t('verdict.unknown');
  if (verdict === 'declined') return t('verdict.declined');
  if (verdict === 'undetermined') return t('verdict.undetermined');
  if (asDocumentLine) return t(verdict === 'verified' ? 'verdict.idVerified' : 'verdict.idRejected');
  return t(verdict === 'verified' ? 'verdict.verified' : 'verdict.rejected');
}

function ageText(t: (key: string, options: Record<string, unknown>) => string, age: NonNullable<OutcomeModel['age']>): string {
  return t(`age.${age.answer}`, { age: age.threshold });
}

function ElementLabel(props: { row: ElementRow }): ReactNode {
  const { t } = useTranslation('outcome');
  const { row } = props;
  if (row.labelKey !== undefined) return <>{t(row.labelKey, row.labelParams)}</>;
  return (
    <>
      <span className="outcome-id">{row.identifier === '' ? t('unknownElement') : row.identifier}</span>
      <span className="outcome-ns">{row.namespace}</span>
    </>
  );
}

/** The labels of missing elements, in the customer's language, joined for one line. */
function missingList(t: (key: string, options?: Record<string, unknown>) => string, rows: readonly MissingRow[]): string {
  return rows.map((row) => (row.labelKey === undefined ? row.identifier : t(row.labelKey, row.labelParams))).join(', ');
}

function Findings(props: { findings: readonly Finding[] }): ReactNode {
  const { t } = useTranslation('outcome');
  const categoryLabel = (category: string): string =>
    category === '' ? t('category.unnamed') : Object.hasOwn(outcomeResources.en.category, category) ? t(`category.${category}`) : category;
  return (
    <ul className="outcome-findings">
      {props.findings.map((finding, index) => (
        <li key={index}>
          <span className="outcome-finding-category">{categoryLabel(finding.category)}</span>
          <ul>
            {finding.messages.map((message, m) => (
              <li key={m}>{message}</li>
            ))}
            {finding.omitted > 0 ? <li className="outcome-muted">{t('moreMessages', { count: finding.omitted })}</li> : null}
          </ul>
        </li>
      ))}
    </ul>
  );
}

function Checks(props: { model: OutcomeModel }): ReactNode {
  const { t } = useTranslation('outcome');
  const line = (label: string, value: AuthDisplay): ReactNode => (
    <div className={`outcome-check outcome-check--${value}`}>
      <dt>{label}</dt>
      <dd>{t(`auth.${value}`)}</dd>
    </div>
  );
  return (
    <section className="outcome-section" aria-labelledby="outcome-checks">
      <h2 id="outcome-checks">{t('auth.title')}</h2>
      <dl className="outcome-checks">
        {line(t('auth.issuer'), props.model.issuerAuthentication)}
        {line(t('auth.device'), props.model.deviceAuthentication)}
      </dl>
    </section>
  );
}

export function OutcomeScreen(props: OutcomeScreenProps): ReactNode {
  const { t } = useTranslation('outcome');
  const model = useMemo(() => presentOutcome(props.outcome), [props.outcome]);
  const headingId = useId();
  const heading = useRef<HTMLHeadingElement>(null);
  const now = useNow(1_000, props.clearsAt !== null);
  const [portraitState, setPortraitState] = useState<PortraitState>('loading');

  useEffect(() => {
    heading.current?.focus({ preventScroll: true });
  }, []);

  const { age, verdict } = model;
  // The age answer leads only for a verified document: for one that was not accepted, "Not accepted" is
  // the headline and "could not determine" a smaller line, so nobody reads a rejection as a mere doubt.
  const ageLeads = age !== undefined && verdict === 'verified';
  const verdictLine = verdictText(t, verdict, age !== undefined);
  const ageLine = age === undefined ? undefined : ageText(t, age);
  const headline = ageLeads && ageLine !== undefined ? ageLine : verdictLine;
  const declined = verdict === 'declined';
  // Age requests read "not determined" from the age line; a declined one needs no age line at all.
  const showAgeLine = age !== undefined && !ageLeads && !declined;
  useAnnounce(
    declined
      ? `${headline}. ${t('verdict.declinedBody')}`
      : ageLine === undefined || !showAgeLine
        ? ageLeads
          ? `${headline}. ${verdictLine}`
          : headline
        : `${headline}. ${ageLine}`,
  );
  const requiredMissing = model.missing.filter((m) => m.required);

  const reasonLabel = (key: string): string =>
    Object.hasOwn(outcomeResources.en.reason, key) && key !== 'other' ? t(`reason.${key}`) : t('reason.other', { key });
  const showPortrait = model.portrait.state !== 'absent';
  const seconds = props.clearsAt === null ? undefined : secondsUntil(props.clearsAt, now);

  const verdictBadge = (
    <div
      className={`outcome-verdict outcome-verdict--${verdict}${ageLeads ? ' outcome-verdict--line' : ''}`}
      data-testid="verdict"
      data-verdict={verdict}
    >
      <Icon shape={VERDICT_ICON[verdict]} />
      {!ageLeads ? (
        <h1 id={headingId} ref={heading} tabIndex={-1} className="outcome-verdict-text">
          {verdictLine}
        </h1>
      ) : (
        <p className="outcome-verdict-text">{verdictLine}</p>
      )}
    </div>
  );

  return (
    <section
      className={`outcome outcome--${verdict}${showPortrait && !model.unreadable ? ' outcome--with-portrait' : ''}`}
      aria-labelledby={headingId}
    >
      <header className="outcome-head">
        {age !== undefined && ageLeads ? (
          <div className={`outcome-age outcome-age--${age.answer}`} data-testid="age-answer" data-age={age.answer}>
            <Icon shape={AGE_ICON[age.answer]} />
            <div>
              <p className="outcome-age-question">{t('age.question', { age: age.threshold })}</p>
              <h1 id={headingId} ref={heading} tabIndex={-1} className="outcome-age-text">
                {headline}
              </h1>
            </div>
          </div>
        ) : null}
        {verdictBadge}
        {showAgeLine ? (
          <p className={`outcome-age-line outcome-age-line--${age.answer}`} data-testid="age-answer" data-age={age.answer}>
            {t('age.question', { age: age.threshold })} <strong>{ageLine}</strong>
          </p>
        ) : null}
        {verdict === 'verified' && requiredMissing.length > 0 ? (
          <p
            className={`outcome-missing${model.notMet ? ' outcome-missing--not-met' : ''}`}
            data-testid="missing"
            data-not-met={model.notMet}
          >
            {model.notMet ? <strong>{t('answer.notMet')}. </strong> : null}
            {t('answer.notShared', { list: missingList(t, requiredMissing) })}
          </p>
        ) : null}
        {declined ? (
          <p className="outcome-declined-body">{t('verdict.declinedBody')}</p>
        ) : verdict === 'verified' ? null : (
          <p className="outcome-see-staff">{t('verdict.seeStaff')}</p>
        )}
      </header>

      {model.unreadable ? null : (
        <div className={`outcome-body${showPortrait ? '' : ' outcome-body--no-portrait'}`}>
          {model.portrait.state === 'absent' ? null : (
            <PortraitCanvas source={model.portrait} onState={setPortraitState} unverified={verdict !== 'verified'} />
          )}
          <div className="outcome-details">
            {verdict === 'verified' ? null : (
              // For staff: the reasons and the backend's own words (digest IDs, SessionData status …) mean
              // nothing to a customer; closed until staff open it.
              <details className="outcome-section outcome-reasons" data-testid="staff-details">
                <summary>{t('staffDetails')}</summary>
                <h2 id="outcome-reasons">{t(verdict === 'undetermined' ? 'reasonsTitleUndetermined' : 'reasonsTitle')}</h2>
                <ul className="outcome-reason-list">
                  {model.reasons.map((key, index) => (
                    <li key={index}>{reasonLabel(key)}</li>
                  ))}
                </ul>
                {model.errors.length > 0 ? (
                  <>
                    <p className="outcome-muted">{t('backendText')}</p>
                    <Findings findings={model.errors} />
                  </>
                ) : null}
              </details>
            )}
            <section className="outcome-section" aria-labelledby="outcome-elements">
              <h2 id="outcome-elements">{t('details')}</h2>
              {model.rows.length === 0 ? (
                <p>{t('noElements')}</p>
              ) : (
                <dl className="outcome-elements">
                  {model.rows.map((row, index) => (
                    <div
                      key={index}
                      className={`outcome-element outcome-element--${row.group}${row.value.kind === 'privileges' ? ' outcome-element--wide' : ''}`}
                      data-testid="element-row"
                      data-element={row.id}
                    >
                      <dt>
                        <ElementLabel row={row} />
                      </dt>
                      <dd>{row.isPortrait ? t(PORTRAIT_ROW[portraitState]) : <CellView cell={row.value} />}</dd>
                    </div>
                  ))}
                </dl>
              )}
              {model.omittedRows > 0 ? <p className="outcome-muted">{t('moreRows', { count: model.omittedRows })}</p> : null}
              {model.docTypes.length > 0 ? (
                <p className="outcome-doctype">
                  {t('docType')}: {model.docTypes.join(', ')}
                </p>
              ) : null}
            </section>
            <Checks model={model} />
            {model.warnings.length > 0 ? (
              <section className="outcome-section outcome-warnings" aria-labelledby="outcome-warnings">
                <h2 id="outcome-warnings">{t('warningsTitle')}</h2>
                <Findings findings={model.warnings} />
              </section>
            ) : null}
          </div>
        </div>
      )}

      <footer className="outcome-foot">
        {seconds === undefined ? <span /> : <p className="outcome-countdown">{t('clearsIn', { count: seconds })}</p>}
        <div className="outcome-actions">
          {declined && props.onTryAgain !== undefined ? (
            <button type="button" className="outcome-retry" data-testid="retry-button" onClick={() => props.onTryAgain?.()}>
              {t('tryAgain')}
            </button>
          ) : null}
          <button type="button" className="outcome-next" data-testid="next-button" onClick={() => props.onNext()}>
            {t('next')}
          </button>
        </div>
      </footer>
    </section>
  );
}
