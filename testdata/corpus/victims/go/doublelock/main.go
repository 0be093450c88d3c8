// doublelock: (*Config).Reload locks c.mu and, still holding it, calls
// validate, which calls Get, which locks c.mu again. Nothing else is alive
// (no listener, no timer), so the runtime itself reports
// "fatal error: all goroutines are asleep - deadlock!" and exits.
package main

import (
	"fmt"
	"sync"
)

type Config struct {
	mu   sync.Mutex
	vals map[string]string
}

func (c *Config) Get(k string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.vals[k]
}

func (c *Config) validate() error {
	if c.Get("listen") == "" {
		return fmt.Errorf("listen is not set")
	}
	return nil
}

func (c *Config) Reload(vals map[string]string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.vals = vals
	return c.validate()
}

func main() {
	c := &Config{}
	if err := c.Reload(map[string]string{"listen": ":8080"}); err != nil {
		fmt.Println(err)
	}
}
