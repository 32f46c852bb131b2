/**
 * The customer's line for each error code of the core (`ErrorView.code`: see errorViewFor in
 * src/kiosk/run-report.ts and the kiosk's own codes). Unknown codes get a generic line: the code and the
 * staff detail are still shown, in smaller type.
 */
export function errorLine(code: string, t: (key: string) => string): string {
  switch (code) {
    case 'backend_error':
      return t('error.line.backendError');
    case 'protocol_violation':
      return t('error.line.protocolViolation');
    case 'timeout':
      return t('error.line.timeout');
    case 'ble_unavailable':
      return t('error.line.bleUnavailable');
    case 'no_input':
      return t('error.line.noInput');
    case 'starting':
      return t('error.line.starting');
    case 'ble_setup_failed':
      return t('error.line.bleSetupFailed');
    case 'ble_link_lost':
      return t('error.line.bleLinkLost');
    case 'ble_transfer_failed':
      return t('error.line.bleTransferFailed');
    case 'connection_lost':
      return t('error.line.connectionLost');
    case 'cancelled':
      return t('error.line.cancelled');
    case 'backend_unavailable':
      return t('error.line.backendUnavailable');
    case 'backend_not_answering':
      return t('error.line.backendNotAnswering');
    case 'config_error':
      return t('error.line.configError');
    // A configuration failure the kiosk keeps probing (src/common/backend-failure-kinds.ts NEEDS_STAFF_CODES).
    case 'backend_refuses_socket':
    case 'backend_api_rejected':
    case 'proxy_refused':
      return t('error.line.backendRefused');
    default:
      return t('error.line.other');
  }
}
