module gosortparity

go 1.22
