from django.db import models


class Author(models.Model):
    email = models.EmailField(unique=True)


class Post(models.Model):
    author = models.ForeignKey(Author, on_delete=models.CASCADE)
    title = models.CharField(max_length=200)
