// Package labtest owns the test helpers for packages outside lab that need a lab directory or a running
// lab: a lab directory that the test's clean-up stops and removes (TempDir), or that the caller does when
// it is done (NewDir: a lab a package's tests share), waiting until no other lab
// holds the lab's ports (WaitForPorts), the reaper that stops those labs should the test binary die
// before its clean-ups (a -timeout panic: reaper.go; TestMain routes lab.Reap and calls ReleaseReaper), and
// an API server alone, started by lab.Up, for a TestMain
// (APIServer).
//
// Only tests import it. The lab package's own tests cannot (labtest imports lab) and have their
// in-package twins in lab's labs_test.go; both wait for the ports through lab.WaitPortsFree.
//
// Imports: lab, testenv
package labtest
