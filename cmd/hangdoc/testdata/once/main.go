package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"
)

type Config struct {
	once sync.Once
	val  string
}

var block = make(chan struct{})

func (c *Config) load() {
	<-block // the loader never returns: once.Do holds its mutex
	c.val = "x"
}

func (c *Config) Get() string {
	c.once.Do(c.load)
	return c.val
}

func main() {
	c := &Config{}
	go c.Get()
	go c.Get()
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		s := string(buf[:n])
		if strings.Contains(s, "sync.(*Mutex).Lock") && strings.Contains(s, "chan receive") {
			os.Stdout.Write(buf[:n])
			fmt.Println()
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
