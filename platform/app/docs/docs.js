/*
 * AgriTrade API reference page.
 *
 * Reads the merged OpenAPI 3 document from /openapi.json and the module versions from /versions,
 * renders every operation grouped by tag, and lets the reader send requests ("Try it") with a
 * bearer token kept in localStorage. Plain browser JavaScript, no dependencies, no network access
 * other than this API's own origin.
 *
 * Every piece of text from the document or from a response goes into the page through
 * textContent / createTextNode; the only URLs put into attributes are same-document anchors,
 * blob: URLs this script creates, same-origin request URLs and http(s) links from descriptions.
 */
(function () {
  'use strict';

  var TOKEN_KEY = 'agritrade.docs.token';
  var SPEC_URL = '/openapi.json';
  var VERSIONS_URL = '/versions';
  var METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
  var MAX_TEXT_SHOWN = 400000; // characters of a text response shown inline
  var MAX_DEPTH = 8; // schema nesting shown / used for examples
  var STREAM_SHOWN_MS = 3000; // how long an event stream's answer is read

  var spec = null;
  var operations = []; // {id, domId, method, path, op, pathItem, tag}
  var blobUrls = new WeakMap(); // response container -> blob URLs to revoke on the next send

  // ---------------------------------------------------------------------------------------------
  // DOM helpers
  // ---------------------------------------------------------------------------------------------

  var PROPS = { value: 1, checked: 1, hidden: 1, multiple: 1, disabled: 1, open: 1, selected: 1, rows: 1 };

  /** el('div', {class: 'x', text: 'y', onclick: fn}, [children...]) */
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        var v = attrs[k];
        if (v === undefined || v === null || v === false) return;
        if (k === 'class') node.className = v;
        else if (k === 'text') node.textContent = String(v);
        else if (k.slice(0, 2) === 'on' && typeof v === 'function') node.addEventListener(k.slice(2), v);
        else if (PROPS[k]) node[k] = v;
        else node.setAttribute(k, v === true ? '' : String(v));
      });
    }
    append(node, children);
    return node;
  }

  function append(node, children) {
    if (children === undefined || children === null || children === false) return node;
    if (!Array.isArray(children)) children = [children];
    children.forEach(function (c) {
      if (c === undefined || c === null || c === false) return;
      if (Array.isArray(c)) append(node, c);
      else if (typeof c === 'string' || typeof c === 'number') node.appendChild(document.createTextNode(String(c)));
      else node.appendChild(c);
    });
    return node;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
    return node;
  }

  function $(id) { return document.getElementById(id); }

  function slug(s) {
    return String(s).replace(/[^A-Za-z0-9_-]+/g, '-').replace(/^-+|-+$/g, '') || 'x';
  }

  /** Only http(s), same-origin relative and in-page links from the document become links. */
  function safeHref(url) {
    if (typeof url !== 'string') return null;
    var u = url.trim();
    if (/^#[\w.~:-]*$/.test(u)) return u;
    if (/^\/(?!\/)/.test(u)) return u;
    if (/^https?:\/\//i.test(u)) return u;
    return null;
  }

  function isObj(v) { return v !== null && typeof v === 'object' && !Array.isArray(v); }

  function pretty(v) {
    try { return JSON.stringify(v, null, 2); } catch (e) { return String(v); }
  }

  // ---------------------------------------------------------------------------------------------
  // Light Markdown for descriptions: paragraphs, "- " lists, `code`, **bold**, [text](url)
  // ---------------------------------------------------------------------------------------------

  function inline(text) {
    var out = [];
    var re = /`([^`]+)`|\*\*([^*]+)\*\*|\[([^\]]+)\]\(([^)\s]+)\)/g;
    var last = 0;
    var m;
    while ((m = re.exec(text)) !== null) {
      if (m.index > last) out.push(text.slice(last, m.index));
      if (m[1] !== undefined) out.push(el('code', { text: m[1] }));
      else if (m[2] !== undefined) out.push(el('strong', { text: m[2] }));
      else {
        var href = safeHref(m[4]);
        if (href) out.push(el('a', { href: href, rel: 'noopener noreferrer', target: href.charAt(0) === '#' ? null : '_blank', text: m[3] }));
        else out.push(m[0]);
      }
      last = re.lastIndex;
    }
    if (last < text.length) out.push(text.slice(last));
    return out;
  }

  function markdown(text, cls) {
    var box = el('div', { class: 'md' + (cls ? ' ' + cls : '') });
    if (typeof text !== 'string' || !text.trim()) return box;
    var para = [];
    var list = null; // {node, items: [[lines]]}
    function flushPara() {
      if (para.length) box.appendChild(el('p', null, inline(para.join(' '))));
      para = [];
    }
    function flushList() {
      if (!list) return;
      list.items.forEach(function (lines) { list.node.appendChild(el('li', null, inline(lines.join(' ')))); });
      box.appendChild(list.node);
      list = null;
    }
    text.replace(/\r\n?/g, '\n').split('\n').forEach(function (line) {
      var trimmed = line.trim();
      if (!trimmed) { flushPara(); flushList(); return; }
      var bullet = /^\s*[-*+]\s+(.*)$/.exec(line);
      var numbered = /^\s*\d+[.)]\s+(.*)$/.exec(line);
      if (bullet || numbered) {
        var tag = bullet ? 'ul' : 'ol';
        flushPara();
        if (list && list.node.tagName.toLowerCase() !== tag) flushList();
        if (!list) list = { node: el(tag), items: [] };
        list.items.push([(bullet || numbered)[1].trim()]);
        return;
      }
      if (list) { list.items[list.items.length - 1].push(trimmed); return; } // continuation of an item
      para.push(trimmed);
    });
    flushPara();
    flushList();
    return box;
  }

  // ---------------------------------------------------------------------------------------------
  // OpenAPI helpers: $ref, allOf, types, examples
  // ---------------------------------------------------------------------------------------------

  function resolveRef(ref) {
    if (typeof ref !== 'string' || ref.indexOf('#/') !== 0) return undefined;
    var cur = spec;
    var parts = ref.slice(2).split('/');
    for (var i = 0; i < parts.length; i++) {
      var key;
      try { key = decodeURIComponent(parts[i]); } catch (e) { key = parts[i]; }
      key = key.replace(/~1/g, '/').replace(/~0/g, '~');
      if (!isObj(cur) && !Array.isArray(cur)) return undefined;
      if (!Object.prototype.hasOwnProperty.call(cur, key)) return undefined;
      cur = cur[key];
    }
    return cur;
  }

  function refName(ref) { return String(ref).split('/').pop(); }

  /** Follows $ref chains of parameters, request bodies, responses, examples. */
  function deref(obj) {
    var seen = {};
    while (isObj(obj) && typeof obj.$ref === 'string') {
      if (seen[obj.$ref]) return {};
      seen[obj.$ref] = true;
      obj = resolveRef(obj.$ref);
    }
    return isObj(obj) ? obj : {};
  }

  /** The schema's main type; OpenAPI 3.1 type arrays give their first non-null entry. */
  function typeOf(s) {
    if (!isObj(s)) return undefined;
    var t = s.type;
    if (Array.isArray(t)) t = t.filter(function (x) { return x !== 'null'; })[0];
    if (t) return t;
    if (isObj(s.properties) || s.additionalProperties) return 'object';
    if (s.items) return 'array';
    return undefined;
  }

  function isNullable(s) {
    return !!(s && (s.nullable || (Array.isArray(s.type) && s.type.indexOf('null') >= 0)));
  }

  /** Resolves $ref and merges allOf into one schema. `seen` guards against cycles. */
  function flatten(schema, seen) {
    seen = seen || {};
    var name = null;
    var s = schema;
    var guard = 0;
    while (isObj(s) && typeof s.$ref === 'string' && guard++ < 32) {
      if (seen[s.$ref]) return { schema: {}, name: refName(s.$ref), cyclic: true, seen: seen };
      seen = Object.assign({}, seen);
      seen[s.$ref] = true;
      name = name || refName(s.$ref);
      s = resolveRef(s.$ref);
    }
    if (!isObj(s)) return { schema: {}, name: name, seen: seen };
    if (Array.isArray(s.allOf)) {
      var merged = Object.assign({}, s);
      delete merged.allOf;
      var props = Object.assign({}, merged.properties || {});
      var required = (merged.required || []).slice();
      s.allOf.forEach(function (part) {
        var f = flatten(part, seen).schema;
        Object.keys(f).forEach(function (k) {
          if (k === 'properties') Object.assign(props, f.properties);
          else if (k === 'required') required = required.concat(f.required || []);
          else if (merged[k] === undefined) merged[k] = f[k];
        });
      });
      if (Object.keys(props).length) merged.properties = props;
      if (required.length) merged.required = required.filter(function (v, i, a) { return a.indexOf(v) === i; });
      s = merged;
    }
    return { schema: s, name: name, seen: seen };
  }

  var STRING_FORMAT_EXAMPLES = {
    'date-time': '2026-11-21T15:04:05Z',
    date: '2026-11-21',
    time: '15:04:05Z',
    uuid: '0196a8e4-3c5b-7d2e-9f10-1a2b3c4d5e6f',
    email: 'ann.smith@example.com',
    uri: 'https://example.com/',
    url: 'https://example.com/',
    hostname: 'example.com',
    ipv4: '192.0.2.10',
    ipv6: '2001:db8::10',
    byte: 'QWdyaVRyYWRl',
    password: 'secret',
    binary: ''
  };

  /** An example value for a schema: `example` when present, else built from types and enums. */
  function exampleFor(schema, mode, depth, seen) {
    depth = depth || 0;
    if (depth > MAX_DEPTH) return undefined;
    var f = flatten(schema, seen);
    if (f.cyclic) return undefined;
    var s = f.schema;
    if (s.example !== undefined) return s.example;
    if (Array.isArray(s.examples) && s.examples.length) return s.examples[0];
    if (s.const !== undefined) return s.const;
    if (s.default !== undefined) return s.default;
    if (Array.isArray(s.enum) && s.enum.length) return s.enum[0];
    var variants = s.oneOf || s.anyOf;
    if (Array.isArray(variants) && variants.length) return exampleFor(variants[0], mode, depth + 1, f.seen);
    var t = typeOf(s);
    if (t === 'object') {
      var out = {};
      var props = s.properties || {};
      Object.keys(props).forEach(function (k) {
        var p = flatten(props[k], f.seen).schema;
        if (mode === 'request' && p.readOnly) return;
        if (mode === 'response' && p.writeOnly) return;
        var v = exampleFor(props[k], mode, depth + 1, f.seen);
        if (v !== undefined) out[k] = v;
      });
      if (!Object.keys(props).length && isObj(s.additionalProperties)) {
        var av = exampleFor(s.additionalProperties, mode, depth + 1, f.seen);
        if (av !== undefined) out.key = av;
      }
      return out;
    }
    if (t === 'array') {
      var item = exampleFor(s.items || {}, mode, depth + 1, f.seen);
      return item === undefined ? [] : [item];
    }
    if (t === 'string') {
      if (s.format && Object.prototype.hasOwnProperty.call(STRING_FORMAT_EXAMPLES, s.format)) return STRING_FORMAT_EXAMPLES[s.format];
      if (s.minLength && s.minLength > 6) return new Array(s.minLength + 1).join('x');
      return 'string';
    }
    if (t === 'integer' || t === 'number') {
      var v = 0;
      if (typeof s.minimum === 'number') v = s.minimum;
      if (typeof s.exclusiveMinimum === 'number') v = s.exclusiveMinimum + 1;
      else if (s.exclusiveMinimum === true) v += 1;
      if (typeof s.maximum === 'number' && v > s.maximum) v = s.maximum;
      return v;
    }
    if (t === 'boolean') return true;
    if (t === 'null') return null;
    return undefined;
  }

  /** The example written in the document for a media type or parameter (or its schema), if any. */
  function explicitExample(holder) {
    if (!isObj(holder)) return undefined;
    if (holder.example !== undefined) return holder.example;
    if (isObj(holder.examples)) {
      var keys = Object.keys(holder.examples);
      for (var i = 0; i < keys.length; i++) {
        var ex = deref(holder.examples[keys[i]]);
        if (ex.value !== undefined) return ex.value;
      }
    }
    if (holder.schema) {
      var s = flatten(holder.schema).schema;
      if (s.example !== undefined) return s.example;
    }
    return undefined;
  }

  /** The example of a media type or parameter: the written one, else one built from the schema. */
  function exampleOf(holder, mode) {
    var ex = explicitExample(holder);
    if (ex !== undefined) return ex;
    if (isObj(holder) && holder.schema) return exampleFor(holder.schema, mode);
    return undefined;
  }

  function typeLabel(schema, seen) {
    var f = flatten(schema, seen);
    var s = f.schema;
    if (f.cyclic) return f.name + ' (recursive)';
    var variants = s.oneOf || s.anyOf;
    var label;
    if (Array.isArray(variants)) {
      label = variants.map(function (v) { return typeLabel(v, f.seen); }).join(' | ');
    } else {
      var t = typeOf(s) || 'any';
      if (t === 'array') label = 'array of ' + typeLabel(s.items || {}, f.seen);
      else if (f.name && t === 'object') label = f.name;
      else label = t + (s.format ? ' (' + s.format + ')' : '');
    }
    if (isNullable(s)) label += ' | null';
    return label;
  }

  function isBinarySchema(schema) {
    var s = flatten(schema).schema;
    if (typeOf(s) === 'array') return isBinarySchema(s.items || {});
    return typeOf(s) === 'string' && (s.format === 'binary' || (s.contentMediaType !== undefined && !s.contentEncoding));
  }

  /** Facts about a schema shown as small chips: enum, limits, pattern, default... */
  function constraintChips(s) {
    var chips = [];
    function add(label, value) { chips.push(el('span', { class: 'chip' }, [label ? el('span', { class: 'chip-k', text: label }) : null, value])); }
    if (Array.isArray(s.enum)) add('one of', s.enum.map(function (v) { return JSON.stringify(v); }).join(', '));
    if (s.format && typeOf(s) !== 'string') add('format', s.format);
    if (s.minimum !== undefined) add(s.exclusiveMinimum === true ? '>' : '≥', String(s.minimum));
    if (typeof s.exclusiveMinimum === 'number') add('>', String(s.exclusiveMinimum));
    if (s.maximum !== undefined) add(s.exclusiveMaximum === true ? '<' : '≤', String(s.maximum));
    if (typeof s.exclusiveMaximum === 'number') add('<', String(s.exclusiveMaximum));
    if (s.minLength !== undefined) add('min length', String(s.minLength));
    if (s.maxLength !== undefined) add('max length', String(s.maxLength));
    if (s.minItems !== undefined) add('min items', String(s.minItems));
    if (s.maxItems !== undefined) add('max items', String(s.maxItems));
    if (s.uniqueItems) add('', 'unique items');
    if (s.pattern) add('pattern', s.pattern);
    if (s.default !== undefined) add('default', JSON.stringify(s.default));
    if (s.example !== undefined && !isObj(s.example) && !Array.isArray(s.example)) add('example', JSON.stringify(s.example));
    if (s.readOnly) add('', 'read-only');
    if (s.writeOnly) add('', 'write-only');
    if (s.deprecated) add('', 'deprecated');
    return chips.length ? el('div', { class: 'chips' }, chips) : null;
  }

  // ---------------------------------------------------------------------------------------------
  // Schema view
  // ---------------------------------------------------------------------------------------------

  function schemaView(schema, depth, seen) {
    depth = depth || 0;
    var f = flatten(schema, seen);
    var s = f.schema;
    var box = el('div', { class: 'schema' });
    if (f.name) box.appendChild(el('div', { class: 'schema-name' }, [el('span', { class: 'type', text: f.name }), f.cyclic ? ' (recursive, shown above)' : null]));
    if (f.cyclic) return box;
    if (depth > MAX_DEPTH) { box.appendChild(el('p', { class: 'muted', text: '…' })); return box; }
    if (s.description && depth === 0) box.appendChild(markdown(s.description, 'schema-desc'));

    var variants = s.oneOf || s.anyOf;
    if (Array.isArray(variants)) {
      box.appendChild(el('div', { class: 'muted', text: s.oneOf ? 'One of:' : 'Any of:' }));
      var list = el('ol', { class: 'variants' });
      variants.forEach(function (v) { list.appendChild(el('li', null, schemaView(v, depth + 1, f.seen))); });
      box.appendChild(list);
      return box;
    }

    var t = typeOf(s);
    if (t === 'object') {
      var props = s.properties || {};
      var required = s.required || [];
      var keys = Object.keys(props);
      if (!keys.length && !s.additionalProperties) {
        box.appendChild(el('div', { class: 'muted', text: 'object' }));
        return box;
      }
      var tbody = el('tbody');
      keys.forEach(function (k) { tbody.appendChild(propertyRow(k, props[k], required.indexOf(k) >= 0, depth, f.seen)); });
      if (s.additionalProperties) {
        var ap = s.additionalProperties === true ? {} : s.additionalProperties;
        tbody.appendChild(propertyRow('(any key)', ap, false, depth, f.seen));
      }
      box.appendChild(el('table', { class: 'props' }, [
        el('thead', null, el('tr', null, [el('th', { text: 'Field' }), el('th', { text: 'Type' }), el('th', { text: 'Description' })])),
        tbody
      ]));
      return box;
    }
    if (t === 'array') {
      box.appendChild(el('div', { class: 'muted' }, ['array of ', el('span', { class: 'type', text: typeLabel(s.items || {}, f.seen) })]));
      var inner = flatten(s.items || {}, f.seen).schema;
      if (hasStructure(inner)) box.appendChild(schemaView(s.items || {}, depth + 1, f.seen));
      var chipsA = constraintChips(s);
      if (chipsA) box.appendChild(chipsA);
      return box;
    }
    box.appendChild(el('div', null, el('span', { class: 'type', text: typeLabel(s, f.seen) })));
    var chips = constraintChips(s);
    if (chips) box.appendChild(chips);
    return box;
  }

  function hasStructure(s) {
    var t = typeOf(s);
    if (Array.isArray(s.oneOf) || Array.isArray(s.anyOf)) return true;
    if (t === 'object') return !!(s.properties && Object.keys(s.properties).length) || isObj(s.additionalProperties);
    if (t === 'array') return hasStructure(flatten(s.items || {}).schema);
    return false;
  }

  function propertyRow(name, propSchema, required, depth, seen) {
    var f = flatten(propSchema, seen);
    var p = f.schema;
    var descCell = el('td', { class: 'desc' }, [
      p.description ? markdown(p.description) : null,
      constraintChips(p)
    ]);
    var isArr = typeOf(p) === 'array';
    var sub = isArr ? flatten(p.items || {}, f.seen) : f;
    if (!f.cyclic && !sub.cyclic && hasStructure(sub.schema)) {
      // Nested structure: rendered when first opened (inline objects open, named ones closed).
      var nestedSrc = isArr ? (p.items || {}) : propSchema;
      var nestedSeen = isArr ? f.seen : seen;
      var det = el('details', { class: 'nested', open: depth < 1 && !sub.name });
      det.appendChild(el('summary', { text: (isArr ? 'items: ' : 'fields of ') + (sub.name || name) }));
      var rendered = false;
      var render = function () {
        if (det.open && !rendered) { rendered = true; det.appendChild(schemaView(nestedSrc, depth + 1, nestedSeen)); }
      };
      det.addEventListener('toggle', render);
      render();
      descCell.appendChild(det);
    }
    return el('tr', null, [
      el('td', { class: 'field' }, [el('code', { text: name }), required ? el('span', { class: 'req', title: 'required', text: ' *' }) : null]),
      el('td', { class: 'type-cell' }, el('span', { class: 'type', text: typeLabel(propSchema, seen) })),
      descCell
    ]);
  }

  /** A JSON value as a <pre> with coloured tokens (text nodes only). */
  function jsonView(value) {
    var pre = el('pre', { class: 'json' });
    function write(v, indent) {
      if (v === null) { pre.appendChild(el('span', { class: 'j-null', text: 'null' })); return; }
      if (Array.isArray(v)) {
        if (!v.length) { pre.appendChild(document.createTextNode('[]')); return; }
        pre.appendChild(document.createTextNode('[\n'));
        v.forEach(function (item, i) {
          pre.appendChild(document.createTextNode(indent + '  '));
          write(item, indent + '  ');
          pre.appendChild(document.createTextNode(i < v.length - 1 ? ',\n' : '\n'));
        });
        pre.appendChild(document.createTextNode(indent + ']'));
        return;
      }
      if (isObj(v)) {
        var keys = Object.keys(v);
        if (!keys.length) { pre.appendChild(document.createTextNode('{}')); return; }
        pre.appendChild(document.createTextNode('{\n'));
        keys.forEach(function (k, i) {
          pre.appendChild(document.createTextNode(indent + '  '));
          pre.appendChild(el('span', { class: 'j-key', text: JSON.stringify(k) }));
          pre.appendChild(document.createTextNode(': '));
          write(v[k], indent + '  ');
          pre.appendChild(document.createTextNode(i < keys.length - 1 ? ',\n' : '\n'));
        });
        pre.appendChild(document.createTextNode(indent + '}'));
        return;
      }
      var cls = typeof v === 'string' ? 'j-str' : typeof v === 'number' ? 'j-num' : typeof v === 'boolean' ? 'j-bool' : '';
      pre.appendChild(el('span', { class: cls, text: JSON.stringify(v) }));
    }
    write(value, '');
    return pre;
  }

  /** Two tabs, "Example" and "Schema", over one media type. */
  function mediaView(mediaType, media, mode) {
    var schema = media.schema;
    var example = /json/.test(mediaType) ? exampleOf(media, mode) : explicitExample(media);
    var isMultipart = /^multipart\//.test(mediaType) || mediaType === 'application/x-www-form-urlencoded';
    var showExample = example !== undefined && !isMultipart && !isBinarySchema(schema || {});
    var panes = [];
    var tabs = [];
    if (schema) panes.push({ label: 'Schema', node: function () { return schemaView(schema, 0); } });
    if (showExample) panes.unshift({ label: 'Example', node: function () { return typeof example === 'string' ? el('pre', { class: 'json', text: example }) : jsonView(example); } });
    var box = el('div', { class: 'media' }, el('div', { class: 'media-head' }, el('code', { class: 'media-type', text: mediaType })));
    if (!panes.length) return box;
    var bar = el('div', { class: 'tabs', role: 'tablist' });
    var body = el('div', { class: 'tab-body' });
    function select(i) {
      tabs.forEach(function (t, j) { t.setAttribute('aria-selected', String(i === j)); t.classList.toggle('active', i === j); });
      clear(body).appendChild(panes[i].node());
    }
    panes.forEach(function (p, i) {
      var b = el('button', { type: 'button', class: 'tab', role: 'tab', text: p.label, onclick: function () { select(i); } });
      tabs.push(b);
      bar.appendChild(b);
    });
    box.firstChild.appendChild(bar);
    box.appendChild(body);
    select(0);
    return box;
  }

  // ---------------------------------------------------------------------------------------------
  // Operations
  // ---------------------------------------------------------------------------------------------

  function collectOperations() {
    var paths = isObj(spec.paths) ? spec.paths : {};
    var used = {};
    Object.keys(paths).forEach(function (path) {
      var item = deref(paths[path]);
      METHODS.forEach(function (method) {
        var op = item[method];
        if (!isObj(op)) return;
        var id = op.operationId || method + ' ' + path;
        var domId = 'op-' + slug(id);
        while (used[domId]) domId += '-';
        used[domId] = true;
        var tags = Array.isArray(op.tags) && op.tags.length ? op.tags : ['default'];
        operations.push({ id: id, domId: domId, method: method, path: path, op: op, pathItem: item, tag: String(tags[0]) });
      });
    });
  }

  function parametersOf(entry) {
    var byKey = {};
    var order = [];
    (entry.pathItem.parameters || []).concat(entry.op.parameters || []).forEach(function (raw) {
      var p = deref(raw);
      if (!p.name || !p.in) return;
      var key = p.in + ':' + p.name;
      if (!byKey[key]) order.push(key);
      byKey[key] = p;
    });
    return order.map(function (k) { return byKey[k]; });
  }

  function needsAuth(op) {
    var sec = op.security !== undefined ? op.security : spec.security;
    if (!Array.isArray(sec) || !sec.length) return false;
    return !sec.some(function (req) { return isObj(req) && !Object.keys(req).length; });
  }

  function tagInfo() {
    var declared = Array.isArray(spec.tags) ? spec.tags : [];
    var order = [];
    var info = {};
    declared.forEach(function (t) { if (t && t.name && !info[t.name]) { info[t.name] = t; order.push(t.name); } });
    operations.forEach(function (o) { if (!info[o.tag]) { info[o.tag] = { name: o.tag }; order.push(o.tag); } });
    return order.filter(function (name) { return operations.some(function (o) { return o.tag === name; }); })
      .map(function (name) { return info[name]; });
  }

  function methodBadge(method, small) {
    return el('span', { class: 'method m-' + method + (small ? ' small' : ''), text: method.toUpperCase() });
  }

  function pathView(path) {
    var code = el('code', { class: 'path' });
    path.split(/(\{[^}]+\})/).forEach(function (part) {
      if (!part) return;
      if (/^\{[^}]+\}$/.test(part)) code.appendChild(el('span', { class: 'path-param', text: part }));
      else code.appendChild(document.createTextNode(part));
    });
    return code;
  }

  function renderNav(tags) {
    var nav = clear($('nav'));
    tags.forEach(function (t) {
      var ops = operations.filter(function (o) { return o.tag === t.name; });
      var list = el('ul');
      ops.forEach(function (o) {
        o.navItem = el('li', null, el('a', { href: '#' + o.domId, title: o.method.toUpperCase() + ' ' + o.path }, [
          methodBadge(o.method, true),
          el('span', { class: 'nav-label', text: o.op.summary || o.path })
        ]));
        list.appendChild(o.navItem);
      });
      var group = el('details', { class: 'nav-group', open: true }, [
        el('summary', null, [el('span', { text: t.name }), el('span', { class: 'count', text: String(ops.length) })]),
        list
      ]);
      t.navGroup = group;
      nav.appendChild(group);
    });
  }

  function renderContent(tags) {
    var main = clear($('content'));
    var info = isObj(spec.info) ? spec.info : {};
    var intro = el('section', { class: 'intro' }, [
      el('h2', null, [info.title || 'AgriTrade API', info.version ? el('span', { class: 'pill', text: info.version }) : null]),
      markdown(info.description || ''),
      el('p', { class: 'muted' }, [
        'Operations marked ', el('span', { class: 'lock', text: 'token' }),
        ' need a bearer token: paste one in Authorize above. OpenAPI document: ',
        el('a', { href: SPEC_URL, text: SPEC_URL }), '.'
      ])
    ]);
    main.appendChild(intro);
    tags.forEach(function (t) {
      var section = el('section', { class: 'tag-section', id: 'tag-' + slug(t.name) }, [
        el('h2', { class: 'tag-title', text: t.name }),
        t.description ? markdown(t.description, 'tag-desc') : null
      ]);
      operations.filter(function (o) { return o.tag === t.name; }).forEach(function (o) {
        section.appendChild(operationCard(o));
      });
      t.section = section;
      main.appendChild(section);
    });
    if (!operations.length) main.appendChild(el('p', { class: 'muted', text: 'The document describes no operations.' }));
  }

  function operationCard(o) {
    var op = o.op;
    var card = el('details', { class: 'op op-' + o.method + (op.deprecated ? ' deprecated' : ''), id: o.domId });
    var summary = el('summary', { class: 'op-summary' }, [
      methodBadge(o.method),
      pathView(o.path),
      el('span', { class: 'op-title', text: op.summary || '' }),
      needsAuth(op) ? el('span', { class: 'lock', title: 'Needs a bearer token', text: 'token' }) : null,
      op.deprecated ? el('span', { class: 'pill warn', text: 'deprecated' }) : null
    ]);
    card.appendChild(summary);
    var rendered = false;
    o.ensureBody = function () {
      if (!rendered) {
        rendered = true;
        card.appendChild(operationBody(o));
      }
    };
    card.addEventListener('toggle', function () { if (card.open) o.ensureBody(); });
    o.card = card;
    return card;
  }

  function operationBody(o) {
    var op = o.op;
    var body = el('div', { class: 'op-body' });
    if (op.description) body.appendChild(markdown(op.description));
    if (op.operationId) body.appendChild(el('p', { class: 'muted small' }, ['operationId ', el('code', { text: op.operationId })]));

    var params = parametersOf(o);
    if (params.length) {
      var rows = params.map(function (p) {
        var schema = p.schema || (isObj(p.content) ? (deref(p.content[Object.keys(p.content)[0]]).schema || {}) : {});
        var fs = flatten(schema).schema;
        var ex = explicitExample(p);
        return el('tr', null, [
          el('td', { class: 'field' }, [el('code', { text: p.name }), p.required ? el('span', { class: 'req', title: 'required', text: ' *' }) : null,
            el('div', { class: 'muted small', text: p.in })]),
          el('td', { class: 'type-cell' }, el('span', { class: 'type', text: typeLabel(schema) })),
          el('td', { class: 'desc' }, [
            p.description ? markdown(p.description) : null,
            constraintChips(Object.assign({}, fs, ex !== undefined && fs.example === undefined && !isObj(ex) && !Array.isArray(ex) ? { example: ex } : {})),
            p.deprecated ? el('span', { class: 'pill warn', text: 'deprecated' }) : null
          ])
        ]);
      });
      body.appendChild(el('h3', { text: 'Parameters' }));
      body.appendChild(el('table', { class: 'props params' }, [
        el('thead', null, el('tr', null, [el('th', { text: 'Name' }), el('th', { text: 'Type' }), el('th', { text: 'Description' })])),
        el('tbody', null, rows)
      ]));
    }

    var rb = op.requestBody ? deref(op.requestBody) : null;
    if (rb && isObj(rb.content)) {
      body.appendChild(el('h3', null, ['Request body', rb.required ? el('span', { class: 'req', text: ' *' }) : null]));
      if (rb.description) body.appendChild(markdown(rb.description));
      Object.keys(rb.content).forEach(function (mt) { body.appendChild(mediaView(mt, deref(rb.content[mt]), 'request')); });
    }

    var responses = isObj(op.responses) ? op.responses : {};
    var codes = Object.keys(responses);
    if (codes.length) {
      body.appendChild(el('h3', { text: 'Responses' }));
      var list = el('div', { class: 'responses' });
      codes.forEach(function (code, i) {
        var r = deref(responses[code]);
        var det = el('details', { class: 'response', open: i === 0 });
        det.appendChild(el('summary', null, [
          el('span', { class: 'status s' + String(code).charAt(0), text: code }),
          el('span', { class: 'response-desc' }, inline((r.description || '').split('\n')[0]))
        ]));
        var inner = el('div', { class: 'response-body' });
        if (r.description && r.description.indexOf('\n') >= 0) inner.appendChild(markdown(r.description));
        if (isObj(r.headers) && Object.keys(r.headers).length) {
          inner.appendChild(el('table', { class: 'props headers' }, [
            el('thead', null, el('tr', null, [el('th', { text: 'Header' }), el('th', { text: 'Type' }), el('th', { text: 'Description' })])),
            el('tbody', null, Object.keys(r.headers).map(function (h) {
              var hd = deref(r.headers[h]);
              return el('tr', null, [el('td', { class: 'field' }, el('code', { text: h })),
                el('td', { class: 'type-cell' }, el('span', { class: 'type', text: typeLabel(hd.schema || {}) })),
                el('td', { class: 'desc' }, hd.description ? markdown(hd.description) : null)]);
            }))
          ]));
        }
        if (isObj(r.content)) {
          Object.keys(r.content).forEach(function (mt) { inner.appendChild(mediaView(mt, deref(r.content[mt]), 'response')); });
        }
        det.appendChild(inner);
        list.appendChild(det);
      });
      body.appendChild(list);
    }

    body.appendChild(tryIt(o, params, rb));
    return body;
  }

  // ---------------------------------------------------------------------------------------------
  // Try it
  // ---------------------------------------------------------------------------------------------

  function paramInput(p, idBase) {
    var schema = flatten(p.schema || {}).schema;
    var id = idBase + '-' + slug(p.in + '-' + p.name);
    var ex = explicitExample(p);
    if (ex === undefined) ex = schema.default;
    var input;
    var values = Array.isArray(schema.enum) ? schema.enum : (typeOf(schema) === 'boolean' ? [true, false] : null);
    // A required parameter starts with its example (so "Send" works as shown, against the demo
    // sample); an optional one shows it as a placeholder and is not sent unless typed, except when
    // the document marks it `x-docs-prefill` (one of a few alternatives the operation needs).
    var prefill = !!p.required || p['x-docs-prefill'] === true;
    var exText = ex !== undefined ? (Array.isArray(ex) ? ex.join(',') : (isObj(ex) ? JSON.stringify(ex) : String(ex))) : undefined;
    if (values) {
      input = el('select', { id: id }, [el('option', { value: '', text: p.required ? '(choose)' : '(not set)' })].concat(values.map(function (v) {
        return el('option', { value: String(v), text: String(v), selected: prefill && exText === String(v) });
      })));
    } else {
      input = el('input', { id: id, type: 'text', placeholder: exText !== undefined ? exText : typeLabel(p.schema || {}), spellcheck: 'false', autocomplete: 'off',
        value: prefill && exText !== undefined ? exText : '' });
    }
    input.dataset.name = p.name;
    input.dataset.in = p.in;
    var isArray = typeOf(schema) === 'array';
    var row = el('div', { class: 'field-row' }, [
      el('label', { for: id }, [el('code', { text: p.name }), p.required ? el('span', { class: 'req', text: ' *' }) : null,
        el('span', { class: 'muted small', text: ' ' + p.in + (isArray ? ', comma-separated' : '') })]),
      input
    ]);
    return { row: row, input: input, param: p, isArray: isArray };
  }

  /**
   * Chooses a file made from an example's text in a file input (DataTransfer is how a page may
   * fill one), so that an upload works from the shown example; the reader may choose another.
   */
  function setExampleFile(input, text, name) {
    try {
      var dt = new DataTransfer();
      dt.items.add(new File([text], name, { type: /\.csv$/.test(name) ? 'text/csv' : 'text/plain' }));
      input.files = dt.files;
      input.title = 'The example file (' + name + ') is chosen; choose another to send it instead.';
    } catch (e) { /* an old browser: the reader chooses a file */ }
  }

  /** The name of an example file: the form's `name` field when it has one, else by the part's content type. */
  function exampleFileName(media, field, formEx) {
    if (typeof formEx.name === 'string' && /^[\w.-]+$/.test(formEx.name)) return formEx.name;
    var enc = isObj(media.encoding) && isObj(media.encoding[field]) ? String(media.encoding[field].contentType || '') : '';
    return field + (/csv/.test(enc) ? '.csv' : '.txt');
  }

  function bodyEditor(mediaType, media, idBase) {
    var schema = media.schema || {};
    var wrap = el('div', { class: 'body-editor' });
    var collect;
    var curlParts;
    if (/^multipart\/form-data/.test(mediaType) || mediaType === 'application/x-www-form-urlencoded') {
      var s = flatten(schema).schema;
      var props = s.properties || {};
      var required = s.required || [];
      // The media type's example gives the form's values: text fields start with them, and a
      // file field's example (the file's text) becomes a file already chosen (see exampleFile).
      var formEx = explicitExample(media);
      if (!isObj(formEx)) formEx = {};
      var fields = Object.keys(props).map(function (name) {
        var ps = flatten(props[name]).schema;
        var id = idBase + '-f-' + slug(name);
        var binary = isBinarySchema(props[name]);
        var given = formEx[name];
        var input;
        if (binary && mediaType !== 'application/x-www-form-urlencoded') {
          input = el('input', { id: id, type: 'file', multiple: typeOf(ps) === 'array' });
          if (typeof given === 'string') setExampleFile(input, given, exampleFileName(media, name, formEx));
        } else if (Array.isArray(ps.enum)) {
          input = el('select', { id: id }, [el('option', { value: '', text: '(not set)' })].concat(ps.enum.map(function (v) { return el('option', { value: String(v), text: String(v), selected: given !== undefined && String(given) === String(v) }); })));
        } else if (typeOf(ps) === 'object' || (typeOf(ps) === 'array' && hasStructure(ps))) {
          // Structured part: sent as one JSON text part. Prefilled only when required.
          var exv = exampleFor(props[name], 'request');
          var exText = exv === undefined ? '' : pretty(exv);
          input = el('textarea', { id: id, rows: 3, spellcheck: 'false', placeholder: exText, value: required.indexOf(name) >= 0 ? exText : '' });
        } else if (typeOf(ps) === 'array') {
          // Array of plain values: one part per comma-separated value (OpenAPI's default encoding).
          var exa = ps.example;
          input = el('input', { id: id, type: 'text', spellcheck: 'false', placeholder: Array.isArray(exa) ? exa.join(',') : 'value1,value2',
            value: Array.isArray(given) ? given.join(',') : '' });
          input.dataset.repeat = '1';
        } else {
          var ex = ps.example !== undefined ? ps.example : ps.default;
          input = el('input', { id: id, type: 'text', spellcheck: 'false', placeholder: ex === undefined ? typeLabel(props[name]) : String(ex),
            value: given !== undefined && !isObj(given) && !Array.isArray(given) ? String(given) : '' });
        }
        wrap.appendChild(el('div', { class: 'field-row' }, [
          el('label', { for: id }, [el('code', { text: name }), required.indexOf(name) >= 0 ? el('span', { class: 'req', text: ' *' }) : null,
            el('span', { class: 'muted small', text: ' ' + (binary ? 'file' : typeLabel(props[name])) + (input.dataset.repeat ? ', comma-separated' : '') })]),
          input
        ]));
        return { name: name, input: input, binary: binary && input.type === 'file', repeat: !!input.dataset.repeat };
      });
      var valuesOf = function (f) {
        if (f.input.value === '') return [];
        if (!f.repeat) return [f.input.value];
        return f.input.value.split(',').map(function (x) { return x.trim(); }).filter(Boolean);
      };
      if (!fields.length) wrap.appendChild(el('p', { class: 'muted', text: 'No fields described.' }));
      collect = function () {
        if (mediaType === 'application/x-www-form-urlencoded') {
          var usp = new URLSearchParams();
          fields.forEach(function (f) { valuesOf(f).forEach(function (v) { usp.append(f.name, v); }); });
          return { body: usp, contentType: mediaType };
        }
        var fd = new FormData();
        fields.forEach(function (f) {
          if (f.binary) {
            Array.prototype.forEach.call(f.input.files || [], function (file) { fd.append(f.name, file, file.name); });
          } else {
            valuesOf(f).forEach(function (v) { fd.append(f.name, v); });
          }
        });
        return { body: fd, contentType: null };
      };
      curlParts = function () {
        var parts = [];
        fields.forEach(function (f) {
          if (f.binary) {
            Array.prototype.forEach.call(f.input.files || [], function (file) { parts.push(['-F', f.name + '=@' + file.name]); });
          } else {
            valuesOf(f).forEach(function (v) {
              parts.push([mediaType === 'application/x-www-form-urlencoded' ? '--data-urlencode' : '-F', f.name + '=' + v]);
            });
          }
        });
        return parts;
      };
    } else if (/json/.test(mediaType) || /^text\//.test(mediaType) && !isBinarySchema(schema)) {
      var ex = exampleOf(media, 'request');
      var text = ex === undefined ? '' : (typeof ex === 'string' && !/json/.test(mediaType) ? ex : pretty(ex));
      var id = idBase + '-body';
      var ta = el('textarea', { id: id, class: 'code-input', rows: Math.min(24, Math.max(4, text.split('\n').length + 1)), spellcheck: 'false', value: text });
      var reset = el('button', { type: 'button', class: 'btn btn-small', text: 'Reset to example', onclick: function () { ta.value = text; } });
      wrap.appendChild(el('div', { class: 'field-row wide' }, [el('label', { for: id }, ['Body ', el('span', { class: 'muted small', text: mediaType })]), ta]));
      wrap.appendChild(reset);
      collect = function () { return { body: ta.value === '' ? null : ta.value, contentType: mediaType, raw: ta.value }; };
      curlParts = function () { return ta.value === '' ? [] : [['--data-raw', ta.value]]; };
    } else {
      var fid = idBase + '-file';
      var fin = el('input', { id: fid, type: 'file' });
      var rawEx = explicitExample(media);
      if (typeof rawEx === 'string') setExampleFile(fin, rawEx, 'example.bin');
      wrap.appendChild(el('div', { class: 'field-row' }, [el('label', { for: fid }, ['Body file ', el('span', { class: 'muted small', text: mediaType })]), fin]));
      collect = function () { return { body: fin.files && fin.files[0] ? fin.files[0] : null, contentType: mediaType }; };
      curlParts = function () { return fin.files && fin.files[0] ? [['--data-binary', '@' + fin.files[0].name]] : []; };
    }
    return { node: wrap, collect: collect, curlParts: curlParts, mediaType: mediaType };
  }

  function tryIt(o, params, rb) {
    var idBase = o.domId + '-try';
    var box = el('div', { class: 'try' });
    var form = el('form', { class: 'try-form', hidden: true, novalidate: true });
    var toggle = el('button', { type: 'button', class: 'btn btn-primary', text: 'Try it', 'aria-expanded': 'false' });
    toggle.addEventListener('click', function () {
      form.hidden = !form.hidden;
      toggle.textContent = form.hidden ? 'Try it' : 'Hide';
      toggle.setAttribute('aria-expanded', String(!form.hidden));
    });
    box.appendChild(el('div', { class: 'try-head' }, [el('h3', { text: 'Try it' }), toggle]));

    var inputs = params.filter(function (p) { return p.in !== 'cookie' && !(p.in === 'header' && /^authorization$/i.test(p.name)); })
      .map(function (p) { return paramInput(p, idBase); });
    if (inputs.length) form.appendChild(el('fieldset', null, [el('legend', { text: 'Parameters' })].concat(inputs.map(function (i) { return i.row; }))));

    var editors = [];
    var current = null;
    if (rb && isObj(rb.content) && Object.keys(rb.content).length) {
      var fs = el('fieldset', null, el('legend', { text: 'Request body' }));
      var mts = Object.keys(rb.content);
      editors = mts.map(function (mt) { return bodyEditor(mt, deref(rb.content[mt]), idBase + '-' + slug(mt)); });
      current = editors[0];
      if (editors.length > 1) {
        var sel = el('select', { id: idBase + '-ct' }, mts.map(function (mt) { return el('option', { value: mt, text: mt }); }));
        sel.addEventListener('change', function () {
          editors.forEach(function (e) { e.node.hidden = e.mediaType !== sel.value; });
          current = editors.filter(function (e) { return e.mediaType === sel.value; })[0];
        });
        fs.appendChild(el('div', { class: 'field-row' }, [el('label', { for: sel.id, text: 'Content type' }), sel]));
      }
      editors.forEach(function (e, i) { e.node.hidden = i !== 0; fs.appendChild(e.node); });
      form.appendChild(fs);
    }

    var sendBtn = el('button', { type: 'submit', class: 'btn btn-primary', text: 'Send' });
    var curlBtn = el('button', { type: 'button', class: 'btn', text: 'Show curl' });
    var note = el('span', { class: 'muted small try-note', role: 'status' });
    form.appendChild(el('div', { class: 'try-actions' }, [sendBtn, curlBtn, note]));
    var curlBox = el('div', { class: 'curl', hidden: true });
    form.appendChild(curlBox);
    var out = el('div', { class: 'try-result', 'aria-live': 'polite' });
    form.appendChild(out);

    function build() {
      var missing = [];
      var path = o.path.replace(/\{([^}]+)\}/g, function (m, name) {
        var inp = inputs.filter(function (i) { return i.param.in === 'path' && i.param.name === name; })[0];
        var v = inp ? inp.input.value.trim() : '';
        if (!v) { missing.push(name); return m; }
        return encodeURIComponent(v);
      });
      var query = new URLSearchParams();
      var headers = {};
      inputs.forEach(function (i) {
        var v = i.input.value;
        if (i.param.in === 'path') return;
        if (v === '' || v === undefined) {
          if (i.param.required) missing.push(i.param.name);
          return;
        }
        if (i.param.in === 'query') {
          if (i.isArray && i.param.explode !== false && (i.param.style === undefined || i.param.style === 'form')) {
            v.split(',').map(function (x) { return x.trim(); }).filter(Boolean).forEach(function (x) { query.append(i.param.name, x); });
          } else {
            query.append(i.param.name, v);
          }
        } else if (i.param.in === 'header') {
          headers[i.param.name] = v;
        }
      });
      var qs = query.toString();
      var url = serverBase(o.path) + path + (qs ? '?' + qs : '');
      return { url: url, headers: headers, missing: missing };
    }

    curlBtn.addEventListener('click', function () {
      var b = build();
      var lines = ['curl -i -X ' + o.method.toUpperCase() + ' ' + shq(location.origin + b.url)];
      if (needsAuth(o.op) || readToken()) lines.push('-H ' + shq('Authorization: Bearer ') + '"$TOKEN"');
      Object.keys(b.headers).forEach(function (h) { lines.push('-H ' + shq(h + ': ' + b.headers[h])); });
      if (current) {
        if (!/^multipart\//.test(current.mediaType)) lines.push('-H ' + shq('Content-Type: ' + current.mediaType));
        current.curlParts().forEach(function (p) { lines.push(p[0] + ' ' + shq(p[1])); });
      }
      var text = lines.join(' \\\n  ');
      clear(curlBox).appendChild(el('pre', { class: 'code', text: text }));
      curlBox.appendChild(el('p', { class: 'muted small', text: 'Set TOKEN in your shell first, e.g. TOKEN=$(agritrade token --sub U1 --roles admin).' }));
      curlBox.hidden = false;
    });

    form.addEventListener('submit', function (ev) {
      ev.preventDefault();
      var b = build();
      if (b.missing.length) {
        note.textContent = 'Missing required: ' + b.missing.join(', ');
        note.classList.add('error');
        return;
      }
      note.textContent = '';
      note.classList.remove('error');
      var init = { method: o.method.toUpperCase(), headers: Object.assign({ Accept: 'application/json, */*;q=0.8' }, b.headers), credentials: 'same-origin' };
      var token = readToken();
      if (token) init.headers.Authorization = 'Bearer ' + token;
      if (current && init.method !== 'GET' && init.method !== 'HEAD') {
        var c = current.collect();
        if (c.body !== null && c.body !== undefined) {
          init.body = c.body;
          if (c.contentType) init.headers['Content-Type'] = c.contentType;
          if (/json/.test(c.contentType || '') && typeof c.raw === 'string') {
            try { JSON.parse(c.raw); } catch (e) { note.textContent = 'The body is not valid JSON; sent as it is.'; }
          }
        }
      }
      var redirects = Object.keys(o.op.responses || {}).some(function (code) { return /^3/.test(code); });
      if (redirects) init.redirect = 'manual';
      sendBtn.disabled = true;
      sendBtn.textContent = 'Sending…';
      var started = performance.now();
      fetch(b.url, init).then(function (res) {
        return showResponse(out, res, performance.now() - started, b.url);
      }).catch(function (err) {
        clear(out).appendChild(el('div', { class: 'result-head' }, el('span', { class: 'status s5', text: 'Network error: ' + (err && err.message ? err.message : String(err)) })));
      }).then(function () {
        sendBtn.disabled = false;
        sendBtn.textContent = 'Send';
      });
    });

    box.appendChild(form);
    return box;
  }

  function serverBase(path) {
    var servers = Array.isArray(spec.servers) ? spec.servers : [];
    var url = servers.length && typeof servers[0].url === 'string' ? servers[0].url : '';
    if (url.charAt(0) !== '/' || url.charAt(1) === '/') return '';
    url = url.replace(/\/+$/, '');
    if (!url || path.indexOf(url + '/') === 0 || path === url) return '';
    return url;
  }

  function shq(s) { return "'" + String(s).replace(/'/g, "'\\''") + "'"; }

  function filenameFrom(disposition) {
    if (!disposition) return null;
    var m = /filename\*\s*=\s*(?:UTF-8|utf-8)''([^;]+)/.exec(disposition);
    if (m) { try { return decodeURIComponent(m[1].trim()); } catch (e) { /* fall through */ } }
    m = /filename\s*=\s*"([^"]*)"/.exec(disposition) || /filename\s*=\s*([^;]+)/.exec(disposition);
    return m ? m[1].trim() : null;
  }

  function formatBytes(n) {
    if (n < 1024) return n + ' B';
    if (n < 1024 * 1024) return (n / 1024).toFixed(1) + ' KiB';
    return (n / 1024 / 1024).toFixed(1) + ' MiB';
  }

  /**
   * A server-sent event stream never ends by itself: show what arrives in the first seconds,
   * then let go of the connection (an application keeps it open, e.g. with EventSource).
   */
  function showStream(out, res) {
    var reader = res.body.getReader();
    var decoder = new TextDecoder();
    var text = '';
    var pre = el('pre', { class: 'code', text: '' });
    out.appendChild(el('p', { class: 'muted small', text: 'An event stream: what arrives in the first ' + STREAM_SHOWN_MS / 1000 + ' s is shown, then the page stops reading (an application keeps it open).' }));
    out.appendChild(pre);
    var stop = setTimeout(function () { reader.cancel().catch(function () {}); }, STREAM_SHOWN_MS);
    function pump() {
      return reader.read().then(function (r) {
        if (r.done) { clearTimeout(stop); return; }
        text += decoder.decode(r.value, { stream: true });
        pre.textContent = text.length > MAX_TEXT_SHOWN ? text.slice(0, MAX_TEXT_SHOWN) : text;
        return pump();
      });
    }
    return pump().catch(function () { clearTimeout(stop); });
  }

  function showResponse(out, res, ms, url) {
    (blobUrls.get(out) || []).forEach(function (u) { URL.revokeObjectURL(u); });
    blobUrls.set(out, []);
    clear(out);
    if (res.type === 'opaqueredirect') {
      out.appendChild(el('div', { class: 'result-head' }, [el('span', { class: 'status s3', text: '3xx redirect' }), el('span', { class: 'muted small', text: Math.round(ms) + ' ms' })]));
      out.appendChild(el('p', { class: 'muted' }, ['The browser does not show a redirect\u2019s target to scripts. Open ',
        el('a', { href: url, target: '_blank', rel: 'noopener noreferrer', text: url }), ' to follow it.']));
      return Promise.resolve();
    }
    var head = el('div', { class: 'result-head' }, [
      el('span', { class: 'status s' + String(res.status).charAt(0), text: res.status + ' ' + (res.statusText || '') }),
      el('span', { class: 'muted small', text: Math.round(ms) + ' ms' })
    ]);
    out.appendChild(head);
    var hdrRows = [];
    res.headers.forEach(function (value, name) { hdrRows.push(el('tr', null, [el('td', { class: 'field' }, el('code', { text: name })), el('td', { class: 'hval', text: value })])); });
    out.appendChild(el('details', { class: 'result-headers' }, [el('summary', { text: 'Headers (' + hdrRows.length + ')' }), el('table', { class: 'props' }, el('tbody', null, hdrRows))]));
    var ct = (res.headers.get('Content-Type') || '').toLowerCase();
    var disposition = res.headers.get('Content-Disposition');
    if (res.status === 204 || res.status === 304 || res.type === 'opaque') {
      out.appendChild(el('p', { class: 'muted', text: '(no body)' }));
      return Promise.resolve();
    }
    if (/^text\/event-stream/.test(ct) && res.body && res.body.getReader) return showStream(out, res);
    return res.blob().then(function (blob) {
      head.appendChild(el('span', { class: 'muted small', text: formatBytes(blob.size) }));
      if (!blob.size) { out.appendChild(el('p', { class: 'muted', text: '(empty body)' })); return; }
      var attachment = disposition && /attachment/i.test(disposition);
      var textual = /json|^text\/|xml|javascript|csv|yaml/.test(ct);
      var link = function () {
        var u = URL.createObjectURL(blob);
        blobUrls.get(out).push(u);
        var name = filenameFrom(disposition) || 'response' + (/json/.test(ct) ? '.json' : /csv/.test(ct) ? '.csv' : '');
        return el('p', null, el('a', { href: u, download: name, class: 'btn', text: 'Download ' + name + ' (' + formatBytes(blob.size) + ')' }));
      };
      if (textual && !attachment || /json/.test(ct)) {
        return blob.text().then(function (text) {
          if (/json/.test(ct)) {
            try { out.appendChild(jsonView(JSON.parse(text))); return; } catch (e) { /* show as text */ }
          }
          var shown = text.length > MAX_TEXT_SHOWN ? text.slice(0, MAX_TEXT_SHOWN) : text;
          out.appendChild(el('pre', { class: 'code', text: shown }));
          if (shown.length < text.length) { out.appendChild(el('p', { class: 'muted small', text: 'Showing the first ' + MAX_TEXT_SHOWN + ' characters.' })); out.appendChild(link()); }
        });
      }
      if (/^image\//.test(ct) && !/svg/.test(ct)) {
        var u = URL.createObjectURL(blob);
        blobUrls.get(out).push(u);
        out.appendChild(el('img', { class: 'preview', src: u, alt: 'Response image' }));
      } else if (textual) {
        return blob.slice(0, 4096).text().then(function (start) {
          out.appendChild(el('pre', { class: 'code', text: start + (blob.size > 4096 ? '\n…' : '') }));
          out.appendChild(link());
        });
      }
      out.appendChild(link());
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Authorization box
  // ---------------------------------------------------------------------------------------------

  function readToken() {
    try { return (localStorage.getItem(TOKEN_KEY) || '').trim(); } catch (e) { return memoryToken; }
  }
  var memoryToken = '';

  function writeToken(t) {
    memoryToken = t;
    try {
      if (t) localStorage.setItem(TOKEN_KEY, t);
      else localStorage.removeItem(TOKEN_KEY);
    } catch (e) { /* storage disabled: keep it for this page only */ }
  }

  function jwtClaims(token) {
    var parts = token.split('.');
    if (parts.length !== 3) return null;
    try {
      var b64 = parts[1].replace(/-/g, '+').replace(/_/g, '/');
      while (b64.length % 4) b64 += '=';
      var bin = atob(b64);
      var bytes = new Uint8Array(bin.length);
      for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
      var claims = JSON.parse(new TextDecoder().decode(bytes));
      return isObj(claims) ? claims : null;
    } catch (e) { return null; }
  }

  function describeDuration(sec) {
    sec = Math.abs(Math.round(sec));
    if (sec < 90) return sec + ' s';
    if (sec < 5400) return Math.round(sec / 60) + ' min';
    if (sec < 172800) return Math.round(sec / 3600) + ' h';
    return Math.round(sec / 86400) + ' days';
  }

  function showAuthState() {
    var state = clear($('auth-state'));
    var token = readToken();
    state.className = 'auth-state';
    if (!token) { state.textContent = 'no token'; return; }
    var c = jwtClaims(token);
    if (!c) { state.textContent = 'token set (not a JWT?)'; state.classList.add('warn'); return; }
    var bits = [];
    if (c.sub !== undefined) bits.push(String(c.name || c.sub));
    if (Array.isArray(c.roles) && c.roles.length) bits.push(c.roles.join(', '));
    else if (typeof c.roles === 'string' && c.roles) bits.push(c.roles);
    if (c.orgName || c.org) bits.push(String(c.orgName || c.org));
    if (typeof c.exp === 'number') {
      var left = c.exp - Date.now() / 1000;
      if (left <= 0) { bits.push('expired ' + describeDuration(left) + ' ago'); state.classList.add('warn'); }
      else bits.push('expires in ' + describeDuration(left));
    }
    if (!state.classList.contains('warn')) state.classList.add('ok');
    state.textContent = bits.join(' · ') || 'token set';
    state.title = 'Token claims: ' + pretty(c);
  }

  function setupAuth() {
    var input = $('auth-token');
    input.value = readToken();
    $('auth').addEventListener('submit', function (ev) {
      ev.preventDefault();
      writeToken(input.value.trim().replace(/^Bearer\s+/i, ''));
      input.value = readToken();
      showAuthState();
    });
    $('auth-clear').addEventListener('click', function () {
      writeToken('');
      input.value = '';
      showAuthState();
    });
    window.addEventListener('storage', function (ev) {
      if (ev.key === TOKEN_KEY) { input.value = readToken(); showAuthState(); }
    });
    showAuthState();
  }

  // ---------------------------------------------------------------------------------------------
  // Versions, filter, navigation
  // ---------------------------------------------------------------------------------------------

  function showVersions(v) {
    var list = clear($('versions'));
    if (!isObj(v)) return;
    var keys = Object.keys(v).filter(function (k) { return k !== 'build'; });
    keys.forEach(function (k) {
      list.appendChild(el('li', { class: 'version' }, [el('span', { class: 'version-k', text: k }), el('span', { class: 'version-v', text: String(v[k]) })]));
    });
    if (v.build !== undefined && v.build !== '') {
      list.appendChild(el('li', { class: 'version build' }, [el('span', { class: 'version-k', text: 'build' }), el('span', { class: 'version-v', text: String(v.build) })]));
    }
  }

  function setupFilter(tags) {
    var input = $('filter');
    function apply() {
      var words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
      operations.forEach(function (o) {
        if (!o.haystack) {
          o.haystack = [o.method, o.path, o.op.summary || '', o.op.operationId || '', o.tag, o.op.description || ''].join(' ').toLowerCase();
        }
        var hit = words.every(function (w) { return o.haystack.indexOf(w) >= 0; });
        o.navItem.hidden = !hit;
        o.card.hidden = !hit;
      });
      tags.forEach(function (t) {
        var any = operations.some(function (o) { return o.tag === t.name && !o.card.hidden; });
        t.navGroup.hidden = !any;
        t.section.hidden = !any;
        if (words.length && any) t.navGroup.open = true;
      });
    }
    input.addEventListener('input', apply);
    input.addEventListener('keydown', function (ev) { if (ev.key === 'Escape') { input.value = ''; apply(); } });
  }

  function openFromHash() {
    var id = decodeURIComponent(location.hash.slice(1));
    if (!id) return;
    var target = document.getElementById(id);
    if (!target) return;
    var o = operations.filter(function (x) { return x.domId === id; })[0];
    if (o) {
      o.ensureBody(); // render now, so that the page is tall enough to scroll to it
      o.card.hidden = false;
      o.card.open = true;
    }
    target.scrollIntoView({ block: 'start' });
    setNavOpen(false);
  }

  function setNavOpen(open) {
    document.body.classList.toggle('nav-open', open);
    $('nav-toggle').setAttribute('aria-expanded', String(open));
  }

  function setupChrome() {
    $('nav-toggle').addEventListener('click', function () { setNavOpen(!document.body.classList.contains('nav-open')); });
    $('nav').addEventListener('click', function (ev) {
      var a = ev.target.closest ? ev.target.closest('a') : null;
      if (a && a.getAttribute('href') === location.hash) openFromHash();
    });
    $('expand-all').addEventListener('click', function () { operations.forEach(function (o) { if (!o.card.hidden) o.card.open = true; }); });
    $('collapse-all').addEventListener('click', function () { operations.forEach(function (o) { o.card.open = false; }); });
    window.addEventListener('hashchange', openFromHash);
  }

  // ---------------------------------------------------------------------------------------------
  // Start
  // ---------------------------------------------------------------------------------------------

  function fetchJSON(url) {
    return fetch(url, { headers: { Accept: 'application/json' }, credentials: 'same-origin' }).then(function (res) {
      if (!res.ok) throw new Error(url + ' answered ' + res.status + ' ' + res.statusText);
      return res.json();
    });
  }

  function start() {
    setupAuth();
    setupChrome();
    fetchJSON(VERSIONS_URL).then(showVersions).catch(function () { /* versions are decoration */ });
    fetchJSON(SPEC_URL).then(function (doc) {
      if (!isObj(doc) || !isObj(doc.paths)) throw new Error(SPEC_URL + ' is not an OpenAPI document');
      spec = doc;
      collectOperations();
      var tags = tagInfo();
      renderNav(tags);
      renderContent(tags);
      setupFilter(tags);
      if (isObj(spec.info) && spec.info.title) document.title = spec.info.title + ' · reference';
      openFromHash();
    }).catch(function (err) {
      clear($('content')).appendChild(el('div', { class: 'error-box' }, [
        el('h2', { text: 'Could not load the API description' }),
        el('p', { text: err && err.message ? err.message : String(err) })
      ]));
    });
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
