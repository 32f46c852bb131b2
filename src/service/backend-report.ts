/**
 * The retry policy's report (src/kiosk/retry-policy.ts) in the two forms that leave the service: the staff
 * diagnostics (with the staff detail, bounded as the contract bounds it) and health.json (codes, counts and
 * times only — the metrics file, readable by other users, is made from it).
 */
import type { BackendFailures } from '../common/kiosk-api.js';
import type { RetryReport } from '../kiosk/retry-policy.js';
import type { BackendHealth } from './health-schema.js';

/** An HTTP status, or null for anything else (the contract has no room for a made-up one). */
function httpStatus(status: number | null): number | null {
  return status !== null && Number.isInteger(status) && status >= 100 && status <= 599 ? status : null;
}

export function backendFailuresView(report: RetryReport | undefined): BackendFailures | undefined {
  if (report === undefined) return undefined;
  const last = report.lastFailure;
  return {
    lastFailure:
      last === null
        ? null
        : { kind: last.kind, stage: last.stage, status: httpStatus(last.status), detail: last.detail.slice(0, 500), at: last.at },
    consecutive: report.consecutive,
    totals: { ...report.totals },
    requestsLastMinute: report.requestsLastMinute,
    maxRequestsPerMinute: report.maxRequestsPerMinute,
  };
}

/** Without the detail: free text can name hosts and proxies, and health.json is codes and counts. */
export function backendHealth(report: RetryReport | undefined): BackendHealth | undefined {
  if (report === undefined) return undefined;
  const last = report.lastFailure;
  return {
    lastFailure:
      last === null ? null : { kind: last.kind, stage: last.stage, status: httpStatus(last.status), at: new Date(last.at).toISOString() },
    consecutive: report.consecutive,
    failures: { ...report.totals },
    requestsLastMinute: report.requestsLastMinute,
    maxRequestsPerMinute: report.maxRequestsPerMinute,
  };
}
