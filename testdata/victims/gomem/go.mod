module gomemvictim

go 1.22
