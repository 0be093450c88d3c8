module gomemold

go 1.20
