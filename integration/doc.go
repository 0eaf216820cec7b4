// Package integration holds tests that drive pi-remote against real
// machinery: an OpenSSH sshd started by the test harness on a loopback port,
// several sshd instances for multi-host tests, a fault-injecting proxy, and
// the docker-compose sandbox hosts. The SSH backend issue fills it; until
// then it has only this package doc.
package integration
