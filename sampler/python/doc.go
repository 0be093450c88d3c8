// Package python reads Python stacks: it runs py-spy safely against a live
// process (a timeout, stdin from /dev/null, its own process group, killed
// and reaped as a group), and parses py-spy's JSON and text dumps and
// CPython's faulthandler dumps into one model. It interprets nothing:
// classify decides what the stacks mean.
package python
