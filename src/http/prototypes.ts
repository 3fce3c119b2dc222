// No user input ever names an object's prototype. Code that reads an ordinary object by a name taken
// from a request finds what the object inherits when it does not hold that name itself: `__proto__`
// and `constructor.prototype` lead to Object.prototype (write there and every object in the process
// has the property), `toString` or `valueOf` to functions shared by the whole process. So every key
// and path segment of a request is refused when it names one of those (prototypeNameIn), and the
// shared prototypes are sealed when the service starts (sealPrototypes).

/**
 * `prototype`, and every property an ordinary object inherits (`constructor`, `toString`, `valueOf`,
 * ...); `__proto__` by name, as the service's flag --disable-proto=delete removes it from
 * Object.prototype. All are word characters.
 */
const INHERITED_NAMES = [...new Set(['prototype', '__proto__', ...Object.getOwnPropertyNames(Object.prototype)])];

/**
 * One of those names as a whole segment of a path as clients write them: `name.givenName`,
 * `urn:...:User:userName`, `emails[type eq "work"]`, `subject:Patient.name`, `a[b]` (segments end at
 * `.`, `:`, `[` and `]`; blanks around a segment do not count), ignoring case: SCIM names are
 * case-insensitive, and no name of this service's inputs differs from these only by case.
 */
const PROTOTYPE_SEGMENT = new RegExp(`(?:^|[.:[\\]])\\s*(${INHERITED_NAMES.join('|')})\\s*(?=$|[.:[\\]])`, 'i');

/** The first segment of `path` (the whole of it without separators) that names a prototype member; undefined when none does. */
export function prototypeNameIn(path: string): string | undefined {
  return PROTOTYPE_SEGMENT.exec(path)?.[1];
}

/** The message of every refusal of such a name, so that clients read one explanation everywhere. */
export function prototypeNameMessage(name: string): string {
  return `"${name}" names a prototype member (prototype, __proto__, constructor, toString, ...): no key or path segment may.`;
}

/**
 * Seals Object.prototype, Array.prototype and Function.prototype: no property can be added to them
 * (or removed), so a write that gets past every check cannot leave a property that every object then
 * inherits (a planted `x-api-key`); it fails, with a TypeError in strict code. Sealed, not frozen:
 * a frozen prototype's properties are read-only, and assigning a property of that name to an ordinary
 * object then fails too. Node's HTTP parser does that for each header (`headers[name] = value`), so
 * one request with a header named `constructor` or `toString` would throw outside any handler and end
 * the process; xpath (under @node-saml/node-saml), @xmldom/xmldom, ipaddr.js (under fastify) and
 * roarr (under slonik) do it for `constructor`, `toString` or `hasOwnProperty` while they load.
 */
export function sealPrototypes(): void {
  Object.seal(Object.prototype);
  Object.seal(Array.prototype);
  Object.seal(Function.prototype);
}
