// placeholder so the layer library is not empty
