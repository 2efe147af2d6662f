// kcoord's web page, what its scripts share (loaded first): building elements, quoting names for
// selectors, and reading the JSON API.
//
// Data from the server is only ever put into the page as text (attributes and text nodes),
// never as HTML.
'use strict';

window.kcoordPage = Object.freeze({
  /** An element with attributes and children (strings become text nodes). */
  el(tag, attributes = {}, ...children) {
    const element = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes)) {
      element.setAttribute(name, value);
    }
    element.append(...children);
    return element;
  },

  /** `s` as a quoted CSS string, for attribute selectors on names from the server. */
  cssString(s) {
    return `"${s.replace(/["\\]/g, '\\$&').replace(/\n/g, '\\a ')}"`;
  },

  /** GET `path` as JSON; an error answer throws with the API's error name and message. */
  async getJson(path) {
    const response = await fetch(path, { cache: 'no-store' });
    const body = await response.json().catch(() => null);
    if (!response.ok) {
      throw new Error(body && body.message ? `${body.error}: ${body.message}` : `HTTP ${response.status}`);
    }
    return body;
  },
});
