package report

import "fmt"

// MemoryBudgetNote says how a diagnosis was degraded to keep hangdoc's
// heap within --max-memory (internal/membudget): heap is what hangdoc held
// once the evidence was read, past half of budget.
func MemoryBudgetNote(heap, budget int64, holderLocks int) string {
	return fmt.Sprintf("memory budget: hangdoc held %s once the evidence was read, past half of --max-memory %s; "+
		"goroutines are grouped by stack shape alone (argument words, wait times and channel evidence of all but each group's first are not read), "+
		"and holders were searched for the %d locks with the most waiters only", Bytes(heap), Bytes(budget), holderLocks)
}
