/**
 * The virtual phone (ISO 18013-5 holder) for tests, QA and the demo: test PKI and mDL, engagement (QR and
 * NFC Type 4 Tag), BLE holder on the virtual radio in both modes, behaviours. See virtual-phone.ts.
 * Nothing here imports kiosk code: the phone is the other side of the wire.
 */
export { VirtualPhone } from './virtual-phone.js';
export type {
  AbortReason,
  EngagementKind,
  PhoneBehaviour,
  PresentationInfo,
  PresentationOptions,
  PresentationOutcome,
  SessionEnding,
  VirtualPhoneOptions,
} from './virtual-phone.js';
export {
  ANDROID_PROFILE,
  APPLE_WALLET_PROFILE,
  GOOGLE_WALLET_PROFILE,
  IPHONE_PROFILE,
  MULTIPAZ_PROFILE,
  PHONE_PROFILE_NAMES,
  PHONE_PROFILES,
  SAMSUNG_WALLET_PROFILE,
  describePhoneProfiles,
  isPhoneProfileName,
  resolvePhoneProfile,
} from './profiles.js';
export type { PhoneProfile, PhoneProfileName } from './profiles.js';
export { HandoverTag, NfcFieldLostError, TagSw, TNEP_STATUS_PROTOCOL_ERROR } from './nfc-tag.js';
export type { CompletedHandover, HandoverTagOptions, VirtualNfcTag } from './nfc-tag.js';
export { answerHandoverRequest, staticHandoverSelect } from './nfc-engagement.js';
export type { BleAssignment, NegotiatedAnswer } from './nfc-engagement.js';
export { BleHolder, expectedIdent } from './ble-holder.js';
export type { BleCloseReason, BleHolderOptions, BleTransportEvents, SendResult } from './ble-holder.js';
export {
  HolderProtocolError,
  HolderSession,
  buildDeviceResponse,
  disclosedElements,
  openSessionEstablishment,
  summarizeDeviceRequest,
  tamperDeviceResponse,
  tamperTarget,
  withDeviceMac,
} from './holder-session.js';
export type {
  ConsentDecision,
  DeviceAuthMethod,
  ElementsByNamespace,
  HolderReply,
  HolderResult,
  HolderSessionOptions,
  OpenedSession,
  RequestedDocument,
} from './holder-session.js';
export { createEngagementKeys, nfcDeviceEngagement, qrBleRetrievalMethod, qrDeviceEngagement } from './engagement.js';
export type { EngagementKeys } from './engagement.js';
export {
  AGE_OVER_THRESHOLDS,
  DEFAULT_HOLDER_DATA,
  MDL_DOC_TYPE,
  MDL_NAMESPACE,
  ageAt,
  getTestCredential,
  issueTestCredential,
  mdlElementValues,
  tamperIssuerSignedBytes,
} from './credential.js';
export type {
  CredentialValidity,
  CredentialValidityInfo,
  DrivingPrivilege,
  MdlHolderData,
  PortraitFormat,
  TamperSpec,
  TestCredential,
  TestCredentialOptions,
} from './credential.js';
export { MDL_DS_EKU, createTestPki, exportTestPkiPem, getTestPki, importTestPkiPem, writeIacaPem } from './pki.js';
export type { TestCertificate, TestPki, TestPkiOptions, TestPkiPem } from './pki.js';
export { drawPortraitJpeg, drawPortraitJpeg2000, drawPortraitRgb, drawSignatureJpeg } from './portrait.js';
export { JP2_SIGNATURE, decodeJpeg2000, encodeJ2kCodestream, jpeg2000Codestream, wrapJp2 } from './jpeg2000.js';
export type { RawImage } from './jpeg2000.js';
export type { PortraitOptions } from './portrait.js';
