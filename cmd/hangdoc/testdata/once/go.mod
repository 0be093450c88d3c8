module oncevictim

go 1.22
