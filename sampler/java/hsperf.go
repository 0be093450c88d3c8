package java

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/hangdoc/hangdoc/model"
)

// A HotSpot JVM publishes its performance counters (the ones jstat reads)
// in a memory-mapped file, /tmp/hsperfdata_USER/PID: GC time and counts,
// heap use, safepoints. Reading it is a file read — no attach, no signal,
// no safepoint — so it is read every sample. The layout (HotSpot's
// perfMemory.hpp): a 32-byte prologue, magic 0xcafec0c0 (big-endian
// bytes), the byte order of the rest, the version, the offset and number
// of the entries; each entry its length, its name's offset, a vector's
// length, a type ('J' a 64-bit long, 'B' bytes), units, variability and
// its data's offset.

// maxHsperf bounds the file read: HotSpot's default is 32 KiB
// (-XX:PerfDataMemorySize), a few MiB at the most.
const maxHsperf = 4 << 20

// ErrNoHsperf: the JVM publishes no counters (-XX:-UsePerfData), or its
// file cannot be found or read.
var ErrNoHsperf = errors.New("no hsperfdata file")

// HsperfPath finds a JVM's counters file as the target sees its /tmp:
// root is /proc/PID/root, nspid its pid in its own namespace. Whoever
// the JVM runs as, the file is /tmp/hsperfdata_USER/NSPID.
func HsperfPath(root string, nspid int) (string, error) {
	matches, _ := filepath.Glob(filepath.Join(root, "tmp", "hsperfdata_*", strconv.Itoa(nspid)))
	if len(matches) == 0 {
		return "", fmt.Errorf("%w in %s/tmp/hsperfdata_*/ for pid %d (-XX:-UsePerfData, or a -Djava.io.tmpdir elsewhere)", ErrNoHsperf, root, nspid)
	}
	return matches[0], nil
}

// ReadHsperf reads and parses a counters file.
func ReadHsperf(path string) (model.JVMCounters, error) {
	f, err := os.Open(path)
	if err != nil {
		return model.JVMCounters{}, fmt.Errorf("%w: %v", ErrNoHsperf, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxHsperf))
	if err != nil {
		return model.JVMCounters{}, fmt.Errorf("%w: %v", ErrNoHsperf, err)
	}
	return ParseHsperf(b)
}

// ParseHsperf reads the counters hangdoc uses from a counters file: GC
// pause time and count over every collector, heap used and its maximum,
// safepoints, live threads, and the ticks' frequency.
func ParseHsperf(b []byte) (model.JVMCounters, error) {
	longs, texts, err := hsperfEntries(b)
	if err != nil {
		return model.JVMCounters{}, err
	}
	var c model.JVMCounters
	c.TickHz = longs["sun.os.hrt.frequency"]
	if c.TickHz <= 0 {
		return model.JVMCounters{}, errors.New("hsperfdata: no sun.os.hrt.frequency")
	}
	var genMax []int64
	for name, v := range longs {
		switch {
		case strings.HasPrefix(name, "sun.gc.collector.") && strings.HasSuffix(name, ".time"):
			c.GCTicks += v
		case strings.HasPrefix(name, "sun.gc.collector.") && strings.HasSuffix(name, ".invocations"):
			c.GCCount += v
		case strings.HasPrefix(name, "sun.gc.generation.") && strings.Contains(name, ".space.") && strings.HasSuffix(name, ".used"):
			c.HeapUsed += v
		case strings.HasPrefix(name, "sun.gc.generation.") && !strings.Contains(name, ".space.") && strings.HasSuffix(name, ".maxCapacity"):
			genMax = append(genMax, v)
		}
	}
	// Generational collectors split the heap between generations; G1
	// reports the whole heap as its young and its old generation's
	// maximum (give or take a few bytes), under its policy's name.
	for _, m := range genMax {
		c.HeapMax += m
	}
	if strings.Contains(texts["sun.gc.policy.name"], "GarbageFirst") && len(genMax) > 0 {
		c.HeapMax = slices.Max(genMax)
	}
	c.SafepointTicks = longs["sun.rt.safepointTime"]
	c.Safepoints = longs["sun.rt.safepoints"]
	c.Threads = longs["java.threads.live"]
	return c, nil
}

// hsperfEntries reads every scalar long and every text of a counters
// file, by name.
func hsperfEntries(b []byte) (map[string]int64, map[string]string, error) {
	if len(b) < 32 || b[0] != 0xca || b[1] != 0xfe || b[2] != 0xc0 || b[3] != 0xc0 {
		return nil, nil, errors.New("hsperfdata: not a counters file (no magic 0xcafec0c0)")
	}
	var order binary.ByteOrder = binary.BigEndian
	if b[4] == 1 {
		order = binary.LittleEndian
	}
	if b[5] != 2 {
		return nil, nil, fmt.Errorf("hsperfdata: version %d.%d, not 2.x", b[5], b[6])
	}
	off := int64(int32(order.Uint32(b[24:])))
	n := int64(int32(order.Uint32(b[28:])))
	if n < 0 || n > int64(len(b))/20 {
		return nil, nil, fmt.Errorf("hsperfdata: %d entries in %d bytes", n, len(b))
	}
	out := make(map[string]int64, n)
	texts := map[string]string{}
	for i := int64(0); i < n; i++ {
		if off < 32 || off+20 > int64(len(b)) {
			return nil, nil, fmt.Errorf("hsperfdata: entry %d at %d, outside the file", i, off)
		}
		e := b[off:]
		length := int64(int32(order.Uint32(e[0:])))
		nameOff := int64(int32(order.Uint32(e[4:])))
		vecLen := int32(order.Uint32(e[8:]))
		typ := e[12]
		dataOff := int64(int32(order.Uint32(e[16:])))
		if length < 20 || off+length > int64(len(b)) || nameOff < 20 || nameOff >= length || dataOff < 20 || dataOff >= length {
			return nil, nil, fmt.Errorf("hsperfdata: entry %d garbled (length %d, name at %d, data at %d)", i, length, nameOff, dataOff)
		}
		entry := e[:length]
		name := entry[nameOff:]
		if z := bytes.IndexByte(name, 0); z >= 0 {
			name = name[:z]
		}
		switch {
		case typ == 'J' && vecLen == 0 && dataOff+8 <= length:
			out[string(name)] = int64(order.Uint64(entry[dataOff:]))
		case typ == 'B' && vecLen > 0 && int64(vecLen) <= length-dataOff:
			text := entry[dataOff : dataOff+int64(vecLen)]
			if z := bytes.IndexByte(text, 0); z >= 0 {
				text = text[:z]
			}
			texts[string(name)] = string(text)
		}
		off += length
	}
	return out, texts, nil
}
