/**
 * The one door into the QA room (docs/ARCHITECTURE.md, *The QA cut line*): the developer CLI, the demo and the Electron QA flavour
 * import QA code from here and nowhere else, so what QA offers them is listed in one place. Production
 * rooms never import src/qa (ESLint rule); the production package leaves the whole folder out.
 * (Unit tests of the simulators may still reach inside: they test the parts, not the door.)
 */

// ---------------------------------------------------------------- a counter with no hardware
export { createVirtualCounter, summarisePhoneOutcome } from './wiring/virtual-counter.js';
export type {
  CounterRig,
  KioskBleRoles,
  PhoneAction,
  PhoneActivity,
  PhoneOutcomeSummary,
  VirtualCounter,
  VirtualCounterOptions,
} from './wiring/virtual-counter.js';
export {
  DEFAULT_PHONE_SETTINGS,
  MAX_CONSENT_DELAY_MS,
  PhoneSettingsChangeSchema,
  PhoneSettingsSchema,
  fromPhoneBehaviour,
  toPhoneBehaviour,
} from './wiring/phone-settings.js';
export type { PhoneSettings, PhoneSettingsChange } from './wiring/phone-settings.js';
export { createVirtualRig } from './devices/virtual-rig.js';
export type { VirtualRig, VirtualRigOptions } from './devices/virtual-rig.js';
export { startPhonePage, PHONE_PAGE_CSP } from './phone-page/server.js';
export type { PhonePage, PhonePageOptions, ScanIntoKiosk } from './phone-page/server.js';

// ---------------------------------------------------------------- QA wiring
export { randomStaffPin, startEmbeddedCounter } from './wiring/embedded-counter.js';
export type { EmbeddedCounter, EmbeddedCounterOptions } from './wiring/embedded-counter.js';
export { startEmbeddedBackend } from './wiring/embedded-backend.js';
export type { EmbeddedBackend, EmbeddedBackendOptions } from './wiring/embedded-backend.js';
export { defaultQaPkiDir, loadOrCreateQaPki, qaTrustDir } from './wiring/qa-pki.js';
export { ScanFeeder } from './wiring/scan-feeder.js';
export { VirtualCustomer } from './wiring/virtual-customer.js';
export type { CustomerHands, Engagement } from './wiring/virtual-customer.js';

// ---------------------------------------------------------------- simulators the CLI drives directly
export { startMockBackend, DEFAULT_LIFETIME_MS, DEFAULT_NFC_RETRY_LIMIT } from './sim/mock-backend/server.js';
export type { MockBackend, MockBackendOptions, RequestArrival } from './sim/mock-backend/server.js';
export { createIsoReaderEngineFactory, loadTrustDirectory } from './sim/mock-backend/reader/index.js';
export { jsonLines } from './sim/mock-backend/protocol-log.js';
export { PHASES as MOCK_BACKEND_PHASES, FaultPlanSchema } from './sim/mock-backend/faults.js';
export type { FaultPlan, FaultPlanInput } from './sim/mock-backend/faults.js';
export { VirtualRadio } from './sim/radio/virtual-radio.js';
export { VirtualPhone } from './sim/virtual-wallet/virtual-phone.js';
export type { PhoneBehaviour, PresentationInfo, PresentationOutcome } from './sim/virtual-wallet/virtual-phone.js';
export { PHONE_PROFILE_NAMES, describePhoneProfiles, isPhoneProfileName } from './sim/virtual-wallet/profiles.js';
export type { PhoneProfileName } from './sim/virtual-wallet/profiles.js';
export { issueTestCredential, DEFAULT_HOLDER_DATA } from './sim/virtual-wallet/credential.js';
export { drawPortraitRgb } from './sim/virtual-wallet/portrait.js';
export type { TestCredential } from './sim/virtual-wallet/credential.js';
export type { VirtualNfcTag } from './sim/virtual-wallet/nfc-tag.js';
export { getTestPki } from './sim/virtual-wallet/pki.js';
export type { TestPki } from './sim/virtual-wallet/pki.js';
export { VpcdAddressError, VpcdCard, parseHostPort } from './sim/vpcd/vpcd-card.js';
export type { VpcdCardEvent, VpcdReaderAddress } from './sim/vpcd/vpcd-card.js';

// ---------------------------------------------------------------- the counter on BlueZ's emulated controllers (tools/btvirt)
export { createHciPhone, createHciRig, createHciStacks, defaultHciDir, hciTtysIn, HCI_CONTROLLER_NAMES } from './hci/hci-rig.js';
export type { PhoneRadio } from './sim/virtual-wallet/phone-radio.js';
export type { HciRig, HciStacks, HciTtys } from './hci/hci-rig.js';

// ---------------------------------------------------------------- virtual Bluetooth for noble and bleno
export { createVirtualBleno } from './devices/bleno-radio-bindings.js';
export { createVirtualNoble } from './devices/noble-radio-bindings.js';
export { createRemoteBleno, RemoteBlenoBindings } from './devices/radio-link/remote-bleno-bindings.js';
export { createRemoteNoble, RemoteNobleBindings } from './devices/radio-link/remote-noble-bindings.js';
export { RadioLinkServer } from './devices/radio-link/server.js';
export { qaRadioChildEntry, radioLinkLauncher } from './devices/radio-link/radio-child-launcher.js';
