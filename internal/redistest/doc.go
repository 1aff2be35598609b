// Package redistest starts a real redis-server for tests, on a free loopback
// port, so that the packages with a Redis implementation (host/store,
// host/bus, ...) test against the server they will meet rather than a mock.
//
// redis-server is found on PATH. When it is missing a test skips, unless
// CI=true, where it fails: .ci/tools.sh installs it with apt, so a missing
// server under CI is a broken machine, not an optional tool.
//
// Each Server is one child process. The package starts one goroutine per
// process, which waits for it to exit and records its status; it ends when
// the process does, and Stop, Kill and the test's cleanup all end the
// process. On Linux the child is also sent SIGKILL if the test binary dies
// first (Pdeathsig), so a test that times out leaves no server behind.
//
// It is for tests only.
package redistest
