module rentalplatform/gateway

go 1.26
