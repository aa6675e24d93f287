// The one sanitiser for text that comes from outside and is stored: response snippets, transport and render
// errors, header values read back. Postgres text columns refuse NUL, JSON and UTF-8 encoders choke on lone
// surrogates, and a receiver can answer with anything (a GIF, protobuf, megabytes of one line), so every such
// text passes through here before it is written.

/** Default bound of a stored outside text, in UTF-16 code units (1,024 as CONTRACT 5 gives snippets). */
export const MAX_STORED_TEXT_LENGTH = 1024;

/** What replaces a NUL: U+FFFD, the same character that replaces a lone surrogate or an invalid byte. */
const REPLACEMENT = '\uFFFD';

// NUL, or a surrogate without its partner. One linear pass of the regex engine; most texts match nothing.
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * `text` made storable: NUL and lone surrogates replaced by U+FFFD, cut to at most `maxLength` code units
 * without splitting a surrogate pair. Bytes decode as UTF-8 first (invalid
 * sequences become U+FFFD, an incomplete one at the end is dropped).
 */
export function sanitiseText(text: string | Uint8Array, maxLength: number = MAX_STORED_TEXT_LENGTH): string {
  const max = Math.max(0, Math.floor(maxLength));
  // Streaming decode drops an incomplete sequence at the end: bytes are usually a cut prefix of a body.
  let s = typeof text === 'string' ? text : new TextDecoder('utf-8').decode(text, { stream: true });
  if (s.length > max) {
    // A slice that ends between the halves of a pair would leave a lone high surrogate: drop it too.
    const end = max > 0 && isHighSurrogate(s.charCodeAt(max - 1)) && isLowSurrogate(s.charCodeAt(max)) ? max - 1 : max;
    s = s.slice(0, end);
  }
  return s.replace(UNSTORABLE, REPLACEMENT);
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}
