/**
 * Which requests are long-running, as upstream's BasicLongRunningRequestCheck decides (verbs watch and
 * proxy; subresources attach, exec, proxy, log and portforward): they last as long as the client wants, so
 * the request timeout does not end them and the in-flight limits do not count them.
 */
const longRunningSubresources = new Set(['attach', 'exec', 'proxy', 'log', 'portforward']);

export function isLongRunning(url: URL): boolean {
  const q = url.searchParams.get('watch');
  if (q === 'true' || q === '1' || q === 'True') return true;
  const segments = url.pathname.split('/').filter(Boolean);
  let rest: string[];
  if (segments[0] === 'api') rest = segments.slice(2);
  else if (segments[0] === 'apis') rest = segments.slice(3);
  else return false;
  if (rest[0] === 'watch' || rest[0] === 'proxy') return true;
  // namespaces/{ns}/{resource}/{name}/{subresource}, or {resource}/{name}/{subresource}.
  if (rest[0] === 'namespaces' && rest.length >= 4) rest = rest.slice(2);
  return rest.length >= 3 && longRunningSubresources.has(rest[2]!);
}
