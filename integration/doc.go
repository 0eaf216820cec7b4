// Package integration holds tests that drive pi-remote against real
// machinery: OpenSSH sshd and dropbear started by the tests on loopback
// ports (as other users, with other login shells, in chroots and mount
// namespaces), several of them for multi-host tests, a fault-injecting
// proxy (netfault), a user's systemd manager, and the built pi-remote
// binary. The docker-compose sandbox hosts are integration/compose's.
//
// The tests come in three tiers (internal/tier, README "Tests"):
//
//   - fast, go test -short: only the tests of fastTier (main_test.go), one
//     end-to-end pass of each front end over sshd.
//   - default, scripts/test.sh (CI): every test, each kind of host once
//     (OpenSSH with and without SFTP, dropbear without, BusyBox without),
//     the chaos soak at 60 calls and the dropbear one-shots at 60. Waits
//     are on events (output seen, a file on the host, a process gone)
//     with deadlines generous enough for a loaded machine; a command that
//     must run through an outage prints until a gate file tells it the
//     test has seen what it needs.
//   - soak, PI_REMOTE_SOAK=1 on top of the default (scripts/bench.sh runs
//     it): the chaos soak at 300 calls, 300 one-shots, dropbear with
//     sftp-server and BusyBox with internal-sftp, and the bounds on time
//     (TestBusyboxListingKeepsUp).
package integration
