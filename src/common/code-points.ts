// Text measured in code points, as Python's len() and slicing measure it:
// the contracts bound lengths that way, not in UTF-16 units.

/** Length in code points; a lone surrogate counts as one. */
export function codePointLength(text: string): number {
  let length = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 0xd800 && code <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    length++;
  }
  return length;
}

/** The first `max` code points of the text. */
export function codePointPrefix(text: string, max: number): string {
  let count = 0;
  let index = 0;
  while (index < text.length && count < max) {
    const code = text.codePointAt(index) ?? 0;
    index += code > 0xffff ? 2 : 1;
    count++;
  }
  return text.slice(0, index);
}
