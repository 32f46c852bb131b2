/**
 * Strings of the QR input (i18next namespace `qr`): the camera preview, the staff paste field, and the
 * hints the screen shows when the host does not take a scanned text (QrScannedResult reasons).
 */

const en = {
  camera: {
    label: 'Camera for QR codes',
    off: 'Camera off',
    starting: 'Starting the camera…',
    active: 'Hold your QR code up to the camera',
    denied: 'The camera is blocked. Use another way shown on this screen, or ask staff for help.',
    missing: 'No camera found. Use another way shown on this screen, or ask staff for help.',
    unplugged: 'The camera was disconnected. Waiting for it to come back…',
    error: 'The camera is not working. Use another way shown on this screen, or ask staff for help.',
  },
  paste: {
    label: 'QR code text (staff)',
    help: 'Paste or scan the text of the QR code, then press Enter.',
    submit: 'Submit',
  },
  hint: {
    not_mdoc: 'This QR code is not a mobile driving licence. Open your wallet app and show its QR code.',
    empty: 'The QR code was empty. Please show it again.',
    not_waiting: 'Please wait until the screen asks for your QR code.',
  },
};

type Strings = typeof en;

const es: Strings = {
  camera: {
    label: 'Cámara para códigos QR',
    off: 'Cámara apagada',
    starting: 'Encendiendo la cámara…',
    active: 'Acerque su código QR a la cámara',
    denied: 'La cámara está bloqueada. Use otra de las opciones de esta pantalla o pida ayuda al personal.',
    missing: 'No se encontró ninguna cámara. Use otra de las opciones de esta pantalla o pida ayuda al personal.',
    unplugged: 'La cámara se desconectó. Esperando a que vuelva…',
    error: 'La cámara no funciona. Use otra de las opciones de esta pantalla o pida ayuda al personal.',
  },
  paste: {
    label: 'Texto del código QR (personal)',
    help: 'Pegue o escanee el texto del código QR y pulse Intro.',
    submit: 'Enviar',
  },
  hint: {
    not_mdoc: 'Este código QR no es un permiso de conducir móvil. Abra su aplicación de cartera y muestre su código QR.',
    empty: 'El código QR estaba vacío. Muéstrelo de nuevo.',
    not_waiting: 'Espere a que la pantalla le pida su código QR.',
  },
};

const fr: Strings = {
  camera: {
    label: 'Caméra pour les codes QR',
    off: 'Caméra éteinte',
    starting: 'Démarrage de la caméra…',
    active: 'Présentez votre code QR devant la caméra',
    denied: 'La caméra est bloquée. Utilisez un autre moyen indiqué sur cet écran, ou demandez de l’aide au personnel.',
    missing: 'Aucune caméra trouvée. Utilisez un autre moyen indiqué sur cet écran, ou demandez de l’aide au personnel.',
    unplugged: 'La caméra a été débranchée. En attente de son retour…',
    error: 'La caméra ne fonctionne pas. Utilisez un autre moyen indiqué sur cet écran, ou demandez de l’aide au personnel.',
  },
  paste: {
    label: 'Texte du code QR (personnel)',
    help: 'Collez ou scannez le texte du code QR, puis appuyez sur Entrée.',
    submit: 'Envoyer',
  },
  hint: {
    not_mdoc: 'Ce code QR n’est pas un permis de conduire mobile. Ouvrez votre application portefeuille et montrez son code QR.',
    empty: 'Le code QR était vide. Veuillez le présenter à nouveau.',
    not_waiting: 'Veuillez attendre que l’écran vous demande votre code QR.',
  },
};

export const qrResources = { en, es, fr } as const;
