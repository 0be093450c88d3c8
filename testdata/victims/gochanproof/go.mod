module gochanproof

go 1.22
