// Package model is the evidence every other package shares: a recording of
// a run, its samples of threads, goroutines and stacks, the processes and
// resources around the target, and the typed kinds (thread state, runtime,
// wait kind, memory trend, dump format) that name them. It gathers and
// decides nothing: the sampler fills it, classify reads it, report prints it.
package model
