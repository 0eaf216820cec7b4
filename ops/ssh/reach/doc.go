// Package reach reaches one SSH host: it owns everything between a host
// spec the user typed and an authenticated *ssh.Client, and nothing of
// what runs over that client.
//
//   - Resolve reads the user's ssh_config (in-process, or through `ssh -G`
//     for what the parser cannot read) into a Config: host name, port,
//     user, identities, agent, known_hosts files, jump chain, timeouts.
//   - Dial connects through the jump chain, each hop with its own
//     authentication (agent and key files behind one callback, in
//     OpenSSH's order: auth.go) and host key check (known_hosts, with the
//     algorithms it records asked for first, and trust on first use only
//     when AcceptNewHostKey says so: hostkey.go), the whole dial bounded
//     by ConnectTimeout. It returns a Link, which knows when bytes last
//     came from the host (for keepalives) and how to reset its socket.
//   - Its errors say what failed: *ConnectError for any failure to reach
//     the host, wrapping *HostKeyError or *AuthError when the host's key
//     or the login was refused.
//
// The ssh_config and known_hosts files are parsed once per process while
// they stay the same (parsed.go), and a key accepted on first use is
// appended under a file lock (lock_*.go).
//
// Package ops/ssh builds the ops backend on a Link: the pool of command
// servers, jobs and files. It does not repeat these names: a caller
// (workspace, the tests' servers) resolves a Config here, passes it to
// ssh.New, and tells connection failures apart with this package's
// error types.
package reach
