// Package integration holds tests that drive pi-remote against real
// machinery: OpenSSH sshd and dropbear started by the tests on loopback
// ports (as other users, with other login shells, in chroots and mount
// namespaces), several of them for multi-host tests, a fault-injecting
// proxy (netfault), a user's systemd manager, and the built pi-remote
// binary. The docker-compose sandbox hosts are integration/compose's.
//
// In the fast tier (go test -short) only the tests of fastTier run: one
// end-to-end pass of each front end over sshd. Everything runs in the
// default tier (scripts/test.sh, CI).
package integration
