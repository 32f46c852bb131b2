/**
 * QR input for the screen: the camera preview (decoded in a worker), the keyboard-wedge scanner hook, the
 * staff paste field, their strings (namespace `qr`) and the timings a benchmark reads.
 */
export { CameraPreview, type CameraPreviewProps } from './CameraPreview.js';
export { PasteScan } from './PasteScan.js';
export { useScannerWedge, ScannerWedgeDetector, type WedgeOptions } from './scanner-wedge.js';
export { qrResources } from './locales.js';
export { sharedQrDecoder, QrDecoder, type DecodeOutcome } from './decoder-client.js';
export { QR_CAMERA_TO_SCAN_MEASURE, QR_DECODE_MEASURE, median } from './qr-timings.js';
